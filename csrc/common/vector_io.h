// The vector cores' copies through their queues, written once for every kernel: a GM piece into a
// VECIN queue (handed back dequeued), the same widened to fp32, and results out to GM through a
// VECOUT queue (as they are, or rounded once to a narrower type). The queue's EnQue / DeQue order
// MTE2 -> V and V -> MTE3; FreeTensor / AllocTensor the reverse.
#ifndef FLA_NPU_COMMON_VECTOR_IO_H
#define FLA_NPU_COMMON_VECTOR_IO_H

#include "kernel_operator.h"

namespace fla_npu {
namespace vector_io {

using namespace AscendC;

// n elements of g into a buffer of queue q, enqueued: the copy is issued ahead of its DeQue (FIFO per
// queue), to run while the vector unit works on something else.
template <class X, class Q>
__aicore__ inline void Fetch(Q& q, const GlobalTensor<X>& g, uint32_t n) {
    LocalTensor<X> x = q.template AllocTensor<X>();
    DataCopy(x, g, n);
    q.EnQue(x);
}

// The same, dequeued (ready for the vector unit; the caller frees it).
template <class X, class Q>
__aicore__ inline LocalTensor<X> CopyIn(Q& q, const GlobalTensor<X>& g, uint32_t n) {
    Fetch(q, g, n);
    return q.template DeQue<X>();
}

// rows x cols elements of g whose rows are `pitch` elements apart (cols, pitch: whole 32-byte blocks)
// into a buffer of queue q, rows contiguous, enqueued (as Fetch).
template <class X, class Q>
__aicore__ inline void FetchRows(Q& q, const GlobalTensor<X>& g, uint32_t rows, uint32_t cols, uint32_t pitch) {
    constexpr uint32_t perBlock = 32 / sizeof(X);
    LocalTensor<X> x = q.template AllocTensor<X>();
    DataCopy(x, g,
             DataCopyParams(static_cast<uint16_t>(rows), static_cast<uint16_t>(cols / perBlock),
                            static_cast<uint16_t>((pitch - cols) / perBlock), 0));
    q.EnQue(x);
}

// The same, dequeued (the caller frees it).
template <class X, class Q>
__aicore__ inline LocalTensor<X> CopyInRows(Q& q, const GlobalTensor<X>& g, uint32_t rows, uint32_t cols, uint32_t pitch) {
    FetchRows(q, g, rows, cols, pitch);
    return q.template DeQue<X>();
}

// dst (fp32) = the n elements of T a FetchRows put first in queue q, widened exactly; the buffer freed.
template <class T, class Q>
__aicore__ inline void WidenFetched(Q& q, const LocalTensor<float>& dst, uint32_t n) {
    LocalTensor<T> x = q.template DeQue<T>();
    Cast(dst, x, RoundMode::CAST_NONE, n);
    q.FreeTensor(x);
}

// dst (fp32) = rows x cols elements of g, rows `pitch` apart (CopyInRows), widened exactly.
template <class T, class Q>
__aicore__ inline void CastInRows(Q& q, const GlobalTensor<T>& g, const LocalTensor<float>& dst, uint32_t rows, uint32_t cols,
                                  uint32_t pitch) {
    FetchRows(q, g, rows, cols, pitch);
    WidenFetched<T>(q, dst, rows * cols);
}

// dst (fp32) = n elements of g (a narrower type, widened exactly), through a buffer of queue q.
template <class T, class Q>
__aicore__ inline void CastIn(Q& q, const GlobalTensor<T>& g, const LocalTensor<float>& dst, uint32_t n) {
    LocalTensor<T> x = CopyIn(q, g, n);
    Cast(dst, x, RoundMode::CAST_NONE, n);
    q.FreeTensor(x);
}

// y, a buffer of queue q the vector unit wrote, to n elements of g; then freed.
template <class X, class Q>
__aicore__ inline void CopyOut(Q& q, const GlobalTensor<X>& g, LocalTensor<X>& y, uint32_t n) {
    q.EnQue(y);
    y = q.template DeQue<X>();
    DataCopy(g, y, n);
    q.FreeTensor(y);
}

// n fp32 elements of src rounded once to X (CAST_RINT), through a buffer of queue q, to g.
template <class X, class Q>
__aicore__ inline void CastOut(Q& q, const GlobalTensor<X>& g, const LocalTensor<float>& src, uint32_t n) {
    LocalTensor<X> y = q.template AllocTensor<X>();
    Cast(y, src, RoundMode::CAST_RINT, n);
    CopyOut(q, g, y, n);
}

}  // namespace vector_io
}  // namespace fla_npu

#endif
