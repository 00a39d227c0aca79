// Test stand-in for the part of CANN's op_host API that csrc/opp/op_host/ uses, so that CI (no CANN)
// compiles those files and runs their tiling functions: the OpDef registration (recorded here for
// the tests to inspect) and the tiling / inference contexts (filled by the tests like CANN's runtime
// would). Written by this project from the API's public names and meanings; it implements only what
// op_host calls, and nothing of CANN's behaviour beyond that. Used by csrc/<op>/tests/*_opp_test.cpp
// (through ../opp_test_util.h).
//
// One behaviour it does model: GetInputShape / GetInputDesc take the index among the inputs the
// call has (absent optional inputs do not count), GetOptionalInputShape the registration's index.
#ifndef FLA_NPU_OPP_HOST_API_STUB_H
#define FLA_NPU_OPP_HOST_API_STUB_H

#include <cstddef>
#include <cstdint>
#include <deque>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ge {
using graphStatus = uint32_t;
constexpr graphStatus GRAPH_SUCCESS = 0;
constexpr graphStatus GRAPH_FAILED = 0xFFFFFFFFu;
enum DataType { DT_FLOAT = 0, DT_FLOAT16 = 1, DT_INT32 = 3, DT_INT64 = 9, DT_BF16 = 27, DT_UNDEFINED = 28 };
enum Format { FORMAT_ND = 2 };
}  // namespace ge

namespace fe {
// What the tests' "device" reports through platform_ascendc::PlatformAscendC.
struct PlatFormInfos {
    uint32_t aiv = 1, aic = 1;
    uint64_t ub_bytes = 0, l0c_bytes = 0;
    uint32_t lib_api_workspace_bytes = 0;
};
}  // namespace fe

namespace gert {

class Shape {
  public:
    Shape() = default;
    Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
    explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}
    size_t GetDimNum() const { return dims_.size(); }
    int64_t GetDim(size_t i) const { return i < dims_.size() ? dims_[i] : 0; }
    void SetDimNum(size_t n) { dims_.resize(n); }
    void SetDim(size_t i, int64_t d) {
        if (i < dims_.size()) dims_[i] = d;
    }
    int64_t GetShapeSize() const {
        int64_t n = 1;
        for (int64_t d : dims_) n *= d;
        return n;
    }
    bool operator==(const Shape& o) const { return dims_ == o.dims_; }

  private:
    std::vector<int64_t> dims_;
};

class StorageShape {
  public:
    StorageShape() = default;
    explicit StorageShape(Shape s) : origin_(s), storage_(s) {}
    const Shape& GetOriginShape() const { return origin_; }
    const Shape& GetStorageShape() const { return storage_; }

  private:
    Shape origin_, storage_;
};

class CompileTimeTensorDesc {
  public:
    CompileTimeTensorDesc() = default;
    explicit CompileTimeTensorDesc(ge::DataType t) : dtype_(t) {}
    ge::DataType GetDataType() const { return dtype_; }

  private:
    ge::DataType dtype_ = ge::DT_UNDEFINED;
};

// Attributes in registration order; an Int attribute is read as int64_t, a Float one as float.
class RuntimeAttrs {
  public:
    struct Value {
        int64_t i = 0;
        float f = 0.0f;
    };
    std::vector<Value> values;
    template <class T>
    const T* GetAttrPointer(size_t index) const;
};
template <> inline const int64_t* RuntimeAttrs::GetAttrPointer<int64_t>(size_t index) const {
    return index < values.size() ? &values[index].i : nullptr;
}
template <> inline const float* RuntimeAttrs::GetAttrPointer<float>(size_t index) const {
    return index < values.size() ? &values[index].f : nullptr;
}

class TilingData {
  public:
    explicit TilingData(size_t capacity) : bytes_(capacity, 0) {}
    void* GetData() { return bytes_.data(); }
    size_t GetCapacity() const { return bytes_.size(); }
    void SetDataSize(size_t n) { size_ = n; }
    size_t GetDataSize() const { return size_; }

  private:
    std::vector<uint8_t> bytes_;
    size_t size_ = 0;
};

// One tensor argument of a call: absent (an optional input not given), or its shape and dtype.
struct TensorArg {
    bool present = false;
    StorageShape shape;
    CompileTimeTensorDesc desc;
};
inline TensorArg Absent() { return TensorArg{}; }
inline TensorArg Tensor(std::vector<int64_t> dims, ge::DataType t) {
    TensorArg a;
    a.present = true;
    a.shape = StorageShape(Shape(std::move(dims)));
    a.desc = CompileTimeTensorDesc(t);
    return a;
}

class TilingContext {
  public:
    // Filled by the test, in registration order.
    std::vector<TensorArg> inputs, outputs;
    RuntimeAttrs attrs;
    fe::PlatFormInfos* platform = nullptr;
    // Written by the tiling function.
    uint32_t block_dim = 0;
    uint32_t schedule_mode = 0;  // SetScheduleMode: 0 normal (CANN's default), 1 batch mode
    int schedule_mode_calls = 0;
    ge::graphStatus schedule_mode_status = ge::GRAPH_SUCCESS;  // what SetScheduleMode returns (a test may fail it)
    TilingData tiling{16 * 1024};
    std::vector<size_t> workspace;

    const StorageShape* GetInputShape(size_t index) const {
        const TensorArg* t = Instance(index);
        return t == nullptr ? nullptr : &t->shape;
    }
    const CompileTimeTensorDesc* GetInputDesc(size_t index) const {
        const TensorArg* t = Instance(index);
        return t == nullptr ? nullptr : &t->desc;
    }
    const StorageShape* GetOptionalInputShape(size_t ir_index) const {
        return ir_index < inputs.size() && inputs[ir_index].present ? &inputs[ir_index].shape : nullptr;
    }
    const CompileTimeTensorDesc* GetOptionalInputDesc(size_t ir_index) const {
        return ir_index < inputs.size() && inputs[ir_index].present ? &inputs[ir_index].desc : nullptr;
    }
    const StorageShape* GetOutputShape(size_t index) const {
        return index < outputs.size() && outputs[index].present ? &outputs[index].shape : nullptr;
    }
    const CompileTimeTensorDesc* GetOutputDesc(size_t index) const {
        return index < outputs.size() && outputs[index].present ? &outputs[index].desc : nullptr;
    }
    const RuntimeAttrs* GetAttrs() const { return &attrs; }
    fe::PlatFormInfos* GetPlatformInfo() const { return platform; }
    void SetBlockDim(uint32_t n) { block_dim = n; }
    ge::graphStatus SetScheduleMode(uint32_t mode) {
        ++schedule_mode_calls;
        if (schedule_mode_status == ge::GRAPH_SUCCESS) schedule_mode = mode;
        return schedule_mode_status;
    }
    TilingData* GetRawTilingData() { return &tiling; }
    size_t* GetWorkspaceSizes(size_t n) {
        workspace.assign(n, 0);
        return workspace.data();
    }

  private:
    const TensorArg* Instance(size_t index) const {
        for (const TensorArg& t : inputs)
            if (t.present && index-- == 0) return &t;
        return nullptr;
    }
};

class InferShapeContext {
  public:
    std::vector<Shape> inputs, outputs;
    const Shape* GetInputShape(size_t i) const { return i < inputs.size() ? &inputs[i] : nullptr; }
    Shape* GetOutputShape(size_t i) { return i < outputs.size() ? &outputs[i] : nullptr; }
};

class InferDataTypeContext {
  public:
    std::vector<ge::DataType> inputs, outputs;
    ge::DataType GetInputDataType(size_t i) const { return i < inputs.size() ? inputs[i] : ge::DT_UNDEFINED; }
    ge::graphStatus SetOutputDataType(size_t i, ge::DataType t) {
        if (i >= outputs.size()) return ge::GRAPH_FAILED;
        outputs[i] = t;
        return ge::GRAPH_SUCCESS;
    }
};

}  // namespace gert

namespace ops {

enum Option { REQUIRED = 0, OPTIONAL = 1, DYNAMIC = 2 };

class OpParamDef {
  public:
    explicit OpParamDef(const char* n) : name(n) {}
    OpParamDef& ParamType(Option o) { param_type = o; return *this; }
    OpParamDef& DataType(std::vector<ge::DataType> t) { dtypes = std::move(t); return *this; }
    OpParamDef& Format(std::vector<ge::Format> f) { formats = std::move(f); return *this; }
    std::string name;
    Option param_type = REQUIRED;
    std::vector<ge::DataType> dtypes;
    std::vector<ge::Format> formats;
};

class OpAttrDef {
  public:
    enum Kind { kUnset, kInt, kFloat };
    explicit OpAttrDef(const char* n) : name(n) {}
    OpAttrDef& AttrType(Option o) { attr_type = o; return *this; }
    OpAttrDef& Int() { kind = kInt; return *this; }
    OpAttrDef& Float() { kind = kFloat; return *this; }
    std::string name;
    Option attr_type = REQUIRED;
    Kind kind = kUnset;
};

using TilingFunc = ge::graphStatus (*)(gert::TilingContext*);
using InferShapeFunc = ge::graphStatus (*)(gert::InferShapeContext*);
using InferDataTypeFunc = ge::graphStatus (*)(gert::InferDataTypeContext*);

class OpAICoreDef {
  public:
    OpAICoreDef& SetTiling(TilingFunc f) { tiling = f; return *this; }
    OpAICoreDef& AddConfig(const char* soc) { configs.emplace_back(soc); return *this; }
    TilingFunc tiling = nullptr;
    std::vector<std::string> configs;
};

class OpDef {
  public:
    explicit OpDef(const char* type) : op_type(type) {}
    virtual ~OpDef() = default;
    OpParamDef& Input(const char* n) { inputs.emplace_back(n); return inputs.back(); }
    OpParamDef& Output(const char* n) { outputs.emplace_back(n); return outputs.back(); }
    OpAttrDef& Attr(const char* n) { attrs.emplace_back(n); return attrs.back(); }
    OpDef& SetInferShape(InferShapeFunc f) { infer_shape = f; return *this; }
    OpDef& SetInferDataType(InferDataTypeFunc f) { infer_dtype = f; return *this; }
    OpAICoreDef& AICore() { return aicore; }

    std::string op_type;
    std::deque<OpParamDef> inputs, outputs;  // deque: references stay valid while chaining
    std::deque<OpAttrDef> attrs;
    InferShapeFunc infer_shape = nullptr;
    InferDataTypeFunc infer_dtype = nullptr;
    OpAICoreDef aicore;
};

// The ops OP_ADD registered, by op type.
inline std::map<std::string, std::unique_ptr<OpDef>>& Registry() {
    static std::map<std::string, std::unique_ptr<OpDef>> ops;
    return ops;
}
struct OpRegistrar {
    explicit OpRegistrar(OpDef* def) { Registry()[def->op_type].reset(def); }
};

}  // namespace ops

#define OP_ADD(OP_TYPE) static ::ops::OpRegistrar g_fla_npu_stub_register_##OP_TYPE(new OP_TYPE(#OP_TYPE))

#endif
