// The NPU flavours' bridge to the operator package's aclnn functions; see aclnn_bridge.h. Also the
// NPU flavours' flaNpuSetOperatorPackage and flaNpuVectorCoreNum (the sim flavour's are in
// api_common.cpp).
#include "aclnn_bridge.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include "api_common.h"

namespace fla_npu {
namespace aclnn {

struct Package {
    std::string path;
    void* handle = nullptr;
    CreateTensorFn create_tensor = nullptr;
    DestroyTensorFn destroy_tensor = nullptr;
    ExecutorFn set_executor_repeatable = nullptr;
    ExecutorFn destroy_executor = nullptr;
    GetDeviceFn get_device = nullptr;  // optional: the ACL runtime, for the vector core count
    GetDeviceInfoFn get_device_info = nullptr;
    std::vector<void*> get_workspace_size;  // by Op::index()
    std::vector<LaunchFn> launch;
};

namespace {

std::vector<Op*>& Registry() {
    static std::vector<Op*> ops;
    return ops;
}

// The package in use. Replaced (never unloaded: CANN's libraries must not be dlclose'd) by
// flaNpuSetOperatorPackage; calls keep the one they started with.
std::mutex g_mutex;
std::shared_ptr<const Package> g_package;
bool g_aclnn_initialised = false;  // aclnnInit has succeeded in this process (under g_mutex)

std::shared_ptr<const Package> CurrentPackage() {
    std::lock_guard<std::mutex> lock(g_mutex);
    return g_package;
}

int32_t AclDataTypeOf(int32_t dtype) {
    switch (dtype) {
        case FLA_NPU_FLOAT32: return kAclFloat;
        case FLA_NPU_FLOAT16: return kAclFloat16;
        case FLA_NPU_BFLOAT16: return kAclBf16;
        case FLA_NPU_INT32: return kAclInt32;
        case FLA_NPU_INT64: return kAclInt64;
        default: return -1;  // ACL_DT_UNDEFINED (validation never lets one through)
    }
}

constexpr const char* kSetPackage = "flaNpuSetOperatorPackage";

}  // namespace

Op::Op(const char* name) : name_(name), get_workspace_size_name_(std::string(name) + "GetWorkspaceSize") {
    index_ = Registry().size();
    Registry().push_back(this);
}

int Call::Begin(const Op& op, const char* caller, std::shared_ptr<Call>* call) {
    std::shared_ptr<const Package> package = CurrentPackage();
    if (!package)
        return SetError(FLA_NPU_ERR_RUNTIME, std::string(caller) + ": the operator package is not loaded: call " + kSetPackage +
                                                 "(<its op_api/lib/libcust_opapi.so>) first (fla_npu.runtime does on first use)");
    *call = std::make_shared<Call>(op, caller, std::move(package));
    return FLA_NPU_OK;
}

Call::Call(const Op& op, const char* caller, std::shared_ptr<const Package> package)
    : op_(op), caller_(caller), package_(std::move(package)), get_workspace_size_fn_(package_->get_workspace_size[op.index()]) {}

Call::~Call() {
    if (executor_ != nullptr) {  // phase one ran, phase two never did: CANN would not free it
        package_->set_executor_repeatable(executor_);
        package_->destroy_executor(executor_);
    }
    for (const AclTensor* t : tensors_) package_->destroy_tensor(t);
}

int Call::Describe(const FlaNpuTensor* t, const char* name, const AclTensor** out) {
    *out = nullptr;
    if (t == nullptr) return FLA_NPU_OK;
    const uint64_t ndim = static_cast<uint64_t>(t->ndim);
    // Every tensor an op takes has been validated contiguous: row-major strides describe the same
    // memory (a size-1 dimension's stride, which means nothing, is normalised).
    int64_t strides[FLA_NPU_MAX_DIMS] = {};
    int64_t expect = 1;
    for (int i = t->ndim - 1; i >= 0; --i) {
        strides[i] = expect;
        expect *= t->shape[i];
    }
    const AclTensor* tensor =
        package_->create_tensor(t->shape, ndim, AclDataTypeOf(t->dtype), strides, 0, kAclFormatNd, t->shape, ndim, t->data);
    if (tensor == nullptr)
        return SetError(FLA_NPU_ERR_RUNTIME,
                        std::string(caller_) + ": aclCreateTensor failed for `" + name + "` (" + package_->path + ")");
    tensors_.push_back(tensor);
    *out = tensor;
    return FLA_NPU_OK;
}

int Call::Launch(void* workspace, uint64_t workspace_size, void* stream) {
    AclOpExecutor* executor = executor_;
    executor_ = nullptr;  // single use: CANN frees it in the launch (not repeatable)
    return Check(op_.name(), package_->launch[op_.index()](workspace, workspace_size, executor, stream));
}

int Call::Check(const char* function, Status status) {
    if (status == 0) return FLA_NPU_OK;
    return SetAclnnError(function, status,
                         std::string(caller_) + ": " + function + " failed with aclnn status " + std::to_string(status) +
                             " (operator package " + package_->path + ")");
}

}  // namespace aclnn
}  // namespace fla_npu

extern "C" {

int flaNpuSetOperatorPackage(const char* libcust_opapi_path) {
    using namespace fla_npu;
    using namespace fla_npu::aclnn;
    ClearError();
    const std::string fn = kSetPackage;
    if (libcust_opapi_path == nullptr || *libcust_opapi_path == '\0')
        return SetError(FLA_NPU_ERR_INVALID_ARGUMENT, fn + ": `libcust_opapi_path` is null or empty");
    const std::string path = libcust_opapi_path;
    struct stat st{};
    if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
        return SetError(FLA_NPU_ERR_RUNTIME,
                        fn + ": " + path + ": no such file (expected the operator package's op_api/lib/libcust_opapi.so)");
    dlerror();
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (handle == nullptr) {
        const char* why = dlerror();
        return SetError(FLA_NPU_ERR_RUNTIME,
                        fn + ": cannot load " + path + ": " + (why ? why : "unknown dlopen error") +
                            ". Its CANN dependencies (libnnopbase.so, libopapi.so, ...) are found through the "
                            "loader's path: source <cann>/set_env.sh (CANN's lib64 on LD_LIBRARY_PATH) before "
                            "starting the process");
    }
    auto package = std::make_shared<Package>();
    package->path = path;
    package->handle = handle;
    // Looked up in the library and its dependencies (libnnopbase.so, ...), not in the process.
    const auto lookup = [handle](const std::string& name) { return dlsym(handle, name.c_str()); };
    const auto missing = [&](const std::string& name, const std::string& why) {
        return SetError(FLA_NPU_ERR_RUNTIME, fn + ": " + path + " has no symbol " + name + " (" + why + ")");
    };
    package->create_tensor = reinterpret_cast<CreateTensorFn>(lookup("aclCreateTensor"));
    if (package->create_tensor == nullptr)
        return missing("aclCreateTensor",
                       "CANN's libnnopbase.so provides it: an operator package's libcust_opapi.so depends on it");
    package->destroy_tensor = reinterpret_cast<DestroyTensorFn>(lookup("aclDestroyTensor"));
    if (package->destroy_tensor == nullptr)
        return missing("aclDestroyTensor",
                       "CANN's libnnopbase.so provides it: an operator package's libcust_opapi.so depends on it");
    package->set_executor_repeatable = reinterpret_cast<ExecutorFn>(lookup("aclSetAclOpExecutorRepeatable"));
    if (package->set_executor_repeatable == nullptr)
        return missing("aclSetAclOpExecutorRepeatable",
                       "CANN's aclnn base library provides it: an operator package's "
                       "libcust_opapi.so depends on it");
    package->destroy_executor = reinterpret_cast<ExecutorFn>(lookup("aclDestroyAclOpExecutor"));
    if (package->destroy_executor == nullptr)
        return missing("aclDestroyAclOpExecutor",
                       "CANN's aclnn base library provides it: an operator package's "
                       "libcust_opapi.so depends on it");
    const auto init = reinterpret_cast<InitFn>(lookup("aclnnInit"));
    if (init == nullptr)
        return missing("aclnnInit",
                       "CANN's aclnn base library provides it: an operator package's libcust_opapi.so "
                       "depends on it");
    for (const Op* op : Registry()) {
        void* get_ws = lookup(op->get_workspace_size_name());
        if (get_ws == nullptr)
            return missing(op->get_workspace_size_name(), "not fla-npu's operator package, or one built without this op");
        void* launch = lookup(op->name());
        if (launch == nullptr) return missing(op->name(), "not fla-npu's operator package, or one built without this op");
        package->get_workspace_size.push_back(get_ws);
        package->launch.push_back(reinterpret_cast<LaunchFn>(launch));
    }
    // The ACL runtime (optional, for flaNpuVectorCoreNum): a dependency of the package, else the
    // libascendcl.so torch_npu has already loaded.
    void* get_device = lookup("aclrtGetDevice");
    void* get_device_info = lookup("aclrtGetDeviceInfo");
    if (get_device == nullptr || get_device_info == nullptr) {
        if (void* acl = dlopen("libascendcl.so", RTLD_NOW | RTLD_NOLOAD)) {
            get_device = dlsym(acl, "aclrtGetDevice");
            get_device_info = dlsym(acl, "aclrtGetDeviceInfo");
        }
    }
    if (get_device != nullptr && get_device_info != nullptr) {
        package->get_device = reinterpret_cast<GetDeviceFn>(get_device);
        package->get_device_info = reinterpret_cast<GetDeviceInfoFn>(get_device_info);
    }
    std::lock_guard<std::mutex> lock(g_mutex);
    // aclnn's resources, once per process, before its first aclnn call (with no configuration file).
    if (!g_aclnn_initialised) {
        const Status status = init(nullptr);
        if (status != 0)
            return SetAclnnError("aclnnInit", status,
                                 fn + ": aclnnInit failed with aclnn status " + std::to_string(status) + " (" + path + ")");
        g_aclnn_initialised = true;
    }
    g_package = std::move(package);
    return FLA_NPU_OK;
}

int32_t flaNpuVectorCoreNum(void) {
    const std::shared_ptr<const fla_npu::aclnn::Package> package = fla_npu::aclnn::CurrentPackage();
    if (!package || package->get_device == nullptr) return 1;
    int32_t device = 0;
    int64_t value = 0;
    if (package->get_device(&device) != 0) return 1;
    if (package->get_device_info(static_cast<uint32_t>(device), fla_npu::aclnn::kAclDevAttrVectorCoreNum, &value) != 0 ||
        value < 1)
        return 1;
    return value > std::numeric_limits<int32_t>::max() ? std::numeric_limits<int32_t>::max() : static_cast<int32_t>(value);
}

}  // extern "C"
