// The frame every kernel body stands in, written once for all of them: the GM bindings and buffer
// sets a kernel class makes when it is constructed, the place of a vector core, this core's units (the
// split of common/core_split.h), the AIC / AIV dispatch of a mixed kernel, one-pair event
// synchronisation and compile-time type tests. Valid Ascend C for the device compiler: __aicore__
// inline functions and templates only (no STL, heap, virtual functions or exceptions).
#ifndef FLA_NPU_COMMON_KERNEL_FRAME_H
#define FLA_NPU_COMMON_KERNEL_FRAME_H

#include "core_split.h"
#include "kernel_operator.h"

namespace fla_npu {
namespace kernel_frame {

using namespace AscendC;

// Whether U and V are one type (the kernels choose output types at compile time; no <type_traits>).
template <class U, class V>
struct IsSame {
    static constexpr bool value = false;
};
template <class U>
struct IsSame<U, U> {
    static constexpr bool value = true;
};

constexpr uint32_t kFloatLanes = 64;  // fp32 lanes of one 256-byte repeat

// Orders pipe E's source before its destination: one SetFlag / WaitFlag pair, on an event id that no
// queue of the core's TPipe holds at that moment (TPipe::FetchEventID). The one way the kernels
// synchronise two pipes outside the queues.
template <HardEvent E>
__aicore__ inline void Sync() {
    const TEventID id = GetTPipePtr()->FetchEventID(E);
    SetFlag<E>(id);
    WaitFlag<E>(id);
}

// A GM address as a type (GM_ADDR is a macro: `GM_ADDR a, b;` would make b a byte), for the structs
// that gather a kernel's GM arguments.
using GmAddr = GM_ADDR;

// Binds each GlobalTensor to its GM address, `elems` elements each; the element type is the tensor's,
// so a binding cannot name another. Bind(n, g1, a1, g2, a2, ...).
template <class X>
__aicore__ inline void Bind(uint64_t elems, GlobalTensor<X>& g, GM_ADDR addr) {
    g.SetGlobalBuffer((__gm__ X*)addr, elems);
}
template <class X, class... Rest>
__aicore__ inline void Bind(uint64_t elems, GlobalTensor<X>& g, GM_ADDR addr, Rest&&... rest) {
    Bind(elems, g, addr);
    Bind(elems, rest...);
}

// Gives every TBuf of `bufs` `bytes` bytes, in the order given (the order places them in their arena).
template <class B>
__aicore__ inline void InitBufs(TPipe& pipe, uint32_t bytes, B& buf) {
    pipe.InitBuffer(buf, bytes);
}
template <class B, class... Rest>
__aicore__ inline void InitBufs(TPipe& pipe, uint32_t bytes, B& buf, Rest&... rest) {
    pipe.InitBuffer(buf, bytes);
    InitBufs(pipe, bytes, rest...);
}

// Gives every queue of `ques` `depth` buffers of `bytes` bytes, in the order given.
template <class Q>
__aicore__ inline void InitQues(TPipe& pipe, uint8_t depth, uint32_t bytes, Q& que) {
    pipe.InitBuffer(que, depth, bytes);
}
template <class Q, class... Rest>
__aicore__ inline void InitQues(TPipe& pipe, uint8_t depth, uint32_t bytes, Q& que, Rest&... rest) {
    pipe.InitBuffer(que, depth, bytes);
    InitQues(pipe, depth, bytes, rest...);
}

// A vector core of a mixed launch: its AI core (the block index its AIC sees) and its sub-block.
struct AivPlace {
    uint32_t block, sub;
};
__aicore__ inline AivPlace ThisAiv() {
    return AivPlace{static_cast<uint32_t>(GetBlockIdx() / GetSubBlockNum()), static_cast<uint32_t>(GetSubBlockIdx())};
}

// The units [first, first + count) of AI core `block` under the tiling's split.
struct Units {
    uint32_t first, count;
};
template <class Tiling>
__aicore__ inline Units CoreUnitsOf(const Tiling& t, uint32_t block) {
    Units r{0, 0};
    core_split::CoreUnits(t, block, &r.first, &r.count);
    return r;
}

// The body of a mixed kernel (KERNEL_TYPE_MIX_AIC_1_2): the Cube class on the AIC, the Vector class
// on each AIV, each constructed from the kernel's GM arguments and tiling (it keeps the tiling, const,
// binds its GM tensors and carves its buffers), then run.
template <class Cube, class Vector, class Args, class Tiling>
__aicore__ inline void RunMixed(const Args& args, const Tiling& t) {
    if ASCEND_IS_AIC {
        Cube op(args, t);
        op.Process();
    }
    if ASCEND_IS_AIV {
        Vector op(args, t);
        op.Process();
    }
}

}  // namespace kernel_frame
}  // namespace fla_npu

#endif
