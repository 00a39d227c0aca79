/* A fake operator package library (what an OPP's op_api/lib/libcust_opapi.so exports, together
 * with the aclCreateTensor / aclDestroyTensor it gets from CANN's libnnopbase.so and the two ACL
 * runtime queries of the vector core count) for testing the NPU flavours' aclnn bridge without
 * CANN. It computes nothing: it records every call and every tensor description it receives, and
 * returns the workspace size and statuses a test asks for (fake_* control functions).
 *
 * Build: cc -shared -fPIC -o libcust_opapi.so fake_aclnn.c
 *   -DFAKE_ACLNN_OMIT_PSA            without the prefix-shared attention pair (a missing op)
 *   -DFAKE_ACLNN_OMIT_CREATE_TENSOR  without aclCreateTensor (a package whose libnnopbase is missing)
 *   -DFAKE_ACLNN_OMIT_INIT           without aclnnInit
 *
 * Everything but the exported API is static, so that several builds loaded into one process (with
 * RTLD_GLOBAL, as the bridge loads them) keep separate state.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
#define FAKE_MAX_DIMS 8
#define FAKE_MAX_TENSORS 256
#define FAKE_MAX_CALLS 64
#define FAKE_MAX_EXECUTORS 64
#define FAKE_MAX_STATUSES 8

typedef struct FakeTensor {
    int64_t view_dims[FAKE_MAX_DIMS];
    int64_t strides[FAKE_MAX_DIMS];
    int64_t storage_dims[FAKE_MAX_DIMS];
    uint64_t view_ndim;
    uint64_t storage_ndim;
    int64_t offset;
    int32_t dtype;
    int32_t format;
    void* data;
    int32_t destroyed; /* times aclDestroyTensor was called on it */
    int32_t id;
} FakeTensor;

typedef struct FakeCall {
    char function[96];
    const FakeTensor* tensors[16]; /* in argument order; NULL for an absent optional input */
    int32_t num_tensors;
    int32_t num_ints;
    int64_t ints[4];
    int32_t num_floats;
    int32_t status; /* what the fake returned */
    double floats[4];
    void* workspace;         /* launch: as received */
    uint64_t workspace_size; /* GetWorkspaceSize: as returned; launch: as received */
    void* executor;          /* GetWorkspaceSize: as returned; launch: as received */
    void* stream;            /* launch: as received */
} FakeCall;

typedef struct FakeExecutor {
    char op[64];
    int32_t launched;
    int32_t repeatable; /* aclSetAclOpExecutorRepeatable was called on it */
    int32_t freed;      /* by its launch (not repeatable) or by aclDestroyAclOpExecutor */
} FakeExecutor;

static FakeTensor g_tensors[FAKE_MAX_TENSORS];
static int32_t g_num_tensors;
static int32_t g_destroyed;
static int32_t g_bad_destroys; /* NULL, unknown, or already destroyed */
static int32_t g_create_limit = -1;
static FakeCall g_calls[FAKE_MAX_CALLS];
static int32_t g_num_calls;
static FakeExecutor g_executors[FAKE_MAX_EXECUTORS];
static int32_t g_num_executors;
static uint64_t g_workspace_size;
static int64_t g_vector_cores = 48;
static int32_t g_device = 0;
static struct {
    char function[96];
    int32_t status;
} g_statuses[FAKE_MAX_STATUSES];
static int32_t g_num_statuses;
static int32_t g_init_calls;         /* aclnnInit, over the process (not reset) */
static int32_t g_init_status;        /* what aclnnInit returns */
static int32_t g_executor_bad_calls; /* repeatable/destroy on an unknown or freed executor, destroy of a non-repeatable one */

/* ---- control and inspection (tests) ----------------------------------------------------------- */

EXPORT void fake_reset(void) {
    memset(g_tensors, 0, sizeof(g_tensors));
    memset(g_calls, 0, sizeof(g_calls));
    memset(g_executors, 0, sizeof(g_executors));
    memset(g_statuses, 0, sizeof(g_statuses));
    g_num_tensors = g_destroyed = g_bad_destroys = g_num_calls = g_num_executors = g_num_statuses = 0;
    g_executor_bad_calls = 0;
    g_create_limit = -1;
    g_workspace_size = 0;
    g_vector_cores = 48;
    g_device = 0;
}
EXPORT void fake_set_workspace_size(uint64_t size) { g_workspace_size = size; }
EXPORT void fake_set_vector_cores(int64_t n) { g_vector_cores = n; }
EXPORT void fake_set_create_limit(int32_t n) { g_create_limit = n; }
/* `function` returns `status` from now on (0 clears it). */
EXPORT void fake_set_status(const char* function, int32_t status) {
    for (int32_t i = 0; i < g_num_statuses; ++i)
        if (strcmp(g_statuses[i].function, function) == 0) {
            g_statuses[i].status = status;
            return;
        }
    if (g_num_statuses < FAKE_MAX_STATUSES) {
        snprintf(g_statuses[g_num_statuses].function, sizeof(g_statuses[0].function), "%s", function);
        g_statuses[g_num_statuses++].status = status;
    }
}
EXPORT int32_t fake_call_count(void) { return g_num_calls; }
EXPORT const FakeCall* fake_call(int32_t i) { return i >= 0 && i < g_num_calls ? &g_calls[i] : NULL; }
EXPORT int32_t fake_tensors_created(void) { return g_num_tensors; }
EXPORT int32_t fake_tensors_destroyed(void) { return g_destroyed; }
EXPORT int32_t fake_bad_destroys(void) { return g_bad_destroys; }
EXPORT int32_t fake_init_calls(void) { return g_init_calls; }
EXPORT void fake_set_init_status(int32_t status) { g_init_status = status; }
EXPORT int32_t fake_executor_bad_calls(void) { return g_executor_bad_calls; }
/* Executors made by a first phase and not freed (by a launch, or destroyed after being made repeatable). */
EXPORT int32_t fake_executors_alive(void) {
    int32_t n = 0;
    for (int32_t i = 0; i < g_num_executors; ++i) n += !g_executors[i].freed;
    return n;
}
EXPORT int32_t fake_executors_destroyed(void) {
    int32_t n = 0;
    for (int32_t i = 0; i < g_num_executors; ++i) n += g_executors[i].freed && g_executors[i].repeatable;
    return n;
}
EXPORT int32_t fake_sizeof_call(void) { return (int32_t)sizeof(FakeCall); }
EXPORT int32_t fake_sizeof_tensor(void) { return (int32_t)sizeof(FakeTensor); }

static int32_t status_of(const char* function) {
    for (int32_t i = 0; i < g_num_statuses; ++i)
        if (strcmp(g_statuses[i].function, function) == 0) return g_statuses[i].status;
    return 0;
}

static FakeCall* record(const char* function) {
    if (g_num_calls >= FAKE_MAX_CALLS) return NULL;
    FakeCall* c = &g_calls[g_num_calls++];
    memset(c, 0, sizeof(*c));
    snprintf(c->function, sizeof(c->function), "%s", function);
    return c;
}

static void add_tensor(FakeCall* c, const void* t) {
    if (c != NULL && c->num_tensors < 16) c->tensors[c->num_tensors++] = (const FakeTensor*)t;
}

/* ---- CANN's libnnopbase.so (what the bridge uses of it) ------------------------------------------ */

#ifndef FAKE_ACLNN_OMIT_CREATE_TENSOR
EXPORT void* aclCreateTensor(const int64_t* view_dims, uint64_t view_ndim, int32_t dtype, const int64_t* stride, int64_t offset,
                             int32_t format, const int64_t* storage_dims, uint64_t storage_ndim, void* data) {
    if (g_create_limit >= 0 && g_num_tensors >= g_create_limit) return NULL;
    if (g_num_tensors >= FAKE_MAX_TENSORS || view_ndim > FAKE_MAX_DIMS || storage_ndim > FAKE_MAX_DIMS) return NULL;
    FakeTensor* t = &g_tensors[g_num_tensors];
    memset(t, 0, sizeof(*t));
    t->id = g_num_tensors++;
    t->view_ndim = view_ndim;
    t->storage_ndim = storage_ndim;
    for (uint64_t i = 0; i < view_ndim; ++i) {
        t->view_dims[i] = view_dims[i];
        t->strides[i] = stride[i];
    }
    for (uint64_t i = 0; i < storage_ndim; ++i) t->storage_dims[i] = storage_dims[i];
    t->offset = offset;
    t->dtype = dtype;
    t->format = format;
    t->data = data;
    return t;
}
#endif

EXPORT int32_t aclDestroyTensor(const void* tensor) {
    const FakeTensor* t = (const FakeTensor*)tensor;
    if (t < g_tensors || t >= g_tensors + g_num_tensors) {
        ++g_bad_destroys;
        return 161001;
    }
    FakeTensor* m = &g_tensors[t - g_tensors];
    if (m->destroyed++) ++g_bad_destroys;
    else ++g_destroyed;
    return 0;
}

/* ---- aclnn's base: initialisation and executors ------------------------------------------------- */

#ifndef FAKE_ACLNN_OMIT_INIT
EXPORT int32_t aclnnInit(const char* config_path) {
    ++g_init_calls;
    return config_path == NULL ? g_init_status : 161001;
}
#endif

static FakeExecutor* live_executor(void* executor) {
    FakeExecutor* e = (FakeExecutor*)executor;
    if (e < g_executors || e >= g_executors + g_num_executors || e->freed) return NULL;
    return e;
}

EXPORT int32_t aclSetAclOpExecutorRepeatable(void* executor) {
    FakeExecutor* e = live_executor(executor);
    if (e == NULL) {
        ++g_executor_bad_calls;
        return 561103;
    }
    e->repeatable = 1;
    return 0;
}

EXPORT int32_t aclDestroyAclOpExecutor(void* executor) {
    FakeExecutor* e = live_executor(executor);
    if (e == NULL || !e->repeatable) { /* only a repeatable executor is the caller's to destroy */
        ++g_executor_bad_calls;
        return 561103;
    }
    e->freed = 1;
    return 0;
}

/* ---- the ACL runtime (vector core count) ------------------------------------------------------- */

EXPORT int aclrtGetDevice(int32_t* device) {
    *device = g_device;
    return 0;
}

EXPORT int aclrtGetDeviceInfo(uint32_t device, int32_t attr, int64_t* value) {
    if ((int32_t)device != g_device || attr != 201 /* ACL_DEV_ATTR_VECTOR_CORE_NUM */) return 107000;
    *value = g_vector_cores;
    return 0;
}

/* ---- the operator package's aclnn pairs ---------------------------------------------------------- */

static int32_t first_phase(FakeCall* c, const char* op, uint64_t* workspace_size, void** executor) {
    const int32_t status = status_of(c ? c->function : "");
    if (c != NULL) c->status = status;
    if (status != 0) return status;
    if (g_num_executors >= FAKE_MAX_EXECUTORS) return 561101;
    FakeExecutor* e = &g_executors[g_num_executors++];
    memset(e, 0, sizeof(*e));
    snprintf(e->op, sizeof(e->op), "%s", op);
    *workspace_size = g_workspace_size;
    *executor = e;
    if (c != NULL) {
        c->workspace_size = g_workspace_size;
        c->executor = e;
    }
    return 0;
}

static int32_t second_phase(const char* op, void* workspace, uint64_t workspace_size, void* executor, void* stream) {
    FakeCall* c = record(op);
    int32_t status = status_of(op);
    FakeExecutor* e = (FakeExecutor*)executor;
    if (status == 0 &&
        (e < g_executors || e >= g_executors + g_num_executors || strcmp(e->op, op) != 0 || e->launched || e->freed))
        status = 161002; /* not an executor of this op, launched twice, or freed */
    if (e >= g_executors && e < g_executors + g_num_executors) {
        e->launched = 1;
        if (!e->repeatable) e->freed = 1; /* CANN frees a non-repeatable executor in its launch */
    }
    if (c != NULL) {
        c->workspace = workspace;
        c->workspace_size = workspace_size;
        c->executor = executor;
        c->stream = stream;
        c->status = status;
    }
    return status;
}

EXPORT int32_t aclnnFlaNpuGateChunkCumsumGetWorkspaceSize(const void* g, const void* a_log, const void* dt_bias,
                                                          const void* cu_seqlens, const void* chunk_indices, int64_t chunk_size,
                                                          int64_t gate_form, double lower_bound, double scale, const void* out,
                                                          uint64_t* workspace_size, void** executor) {
    FakeCall* c = record("aclnnFlaNpuGateChunkCumsumGetWorkspaceSize");
    add_tensor(c, g);
    add_tensor(c, a_log);
    add_tensor(c, dt_bias);
    add_tensor(c, cu_seqlens);
    add_tensor(c, chunk_indices);
    add_tensor(c, out);
    if (c != NULL) {
        c->num_ints = 2;
        c->ints[0] = chunk_size;
        c->ints[1] = gate_form;
        c->num_floats = 2;
        c->floats[0] = lower_bound;
        c->floats[1] = scale;
    }
    return first_phase(c, "aclnnFlaNpuGateChunkCumsum", workspace_size, executor);
}

EXPORT int32_t aclnnFlaNpuGateChunkCumsum(void* workspace, uint64_t workspace_size, void* executor, void* stream) {
    return second_phase("aclnnFlaNpuGateChunkCumsum", workspace, workspace_size, executor, stream);
}

#ifndef FAKE_ACLNN_OMIT_PSA
EXPORT int32_t aclnnFlaNpuPrefixSharedAttentionGetWorkspaceSize(const void* q, const void* k, const void* v, double scale,
                                                                const void* out, uint64_t* workspace_size, void** executor) {
    FakeCall* c = record("aclnnFlaNpuPrefixSharedAttentionGetWorkspaceSize");
    add_tensor(c, q);
    add_tensor(c, k);
    add_tensor(c, v);
    add_tensor(c, out);
    if (c != NULL) {
        c->num_floats = 1;
        c->floats[0] = scale;
    }
    return first_phase(c, "aclnnFlaNpuPrefixSharedAttention", workspace_size, executor);
}

EXPORT int32_t aclnnFlaNpuPrefixSharedAttention(void* workspace, uint64_t workspace_size, void* executor, void* stream) {
    return second_phase("aclnnFlaNpuPrefixSharedAttention", workspace, workspace_size, executor, stream);
}
#endif

EXPORT int32_t aclnnFlaNpuChunkOutputGetWorkspaceSize(const void* q, const void* g, const void* s, const void* aqk,
                                                      const void* v_new, const void* out, uint64_t* workspace_size,
                                                      void** executor) {
    FakeCall* c = record("aclnnFlaNpuChunkOutputGetWorkspaceSize");
    add_tensor(c, q);
    add_tensor(c, g);
    add_tensor(c, s);
    add_tensor(c, aqk);
    add_tensor(c, v_new);
    add_tensor(c, out);
    return first_phase(c, "aclnnFlaNpuChunkOutput", workspace_size, executor);
}

EXPORT int32_t aclnnFlaNpuChunkOutput(void* workspace, uint64_t workspace_size, void* executor, void* stream) {
    return second_phase("aclnnFlaNpuChunkOutput", workspace, workspace_size, executor, stream);
}

EXPORT int32_t aclnnFlaNpuWyFastGetWorkspaceSize(const void* k, const void* v, const void* beta, const void* akk, const void* g,
                                                 const void* w, const void* u, const void* kg, uint64_t* workspace_size,
                                                 void** executor) {
    FakeCall* c = record("aclnnFlaNpuWyFastGetWorkspaceSize");
    add_tensor(c, k);
    add_tensor(c, v);
    add_tensor(c, beta);
    add_tensor(c, akk);
    add_tensor(c, g);
    add_tensor(c, w);
    add_tensor(c, u);
    add_tensor(c, kg);
    return first_phase(c, "aclnnFlaNpuWyFast", workspace_size, executor);
}

EXPORT int32_t aclnnFlaNpuWyFast(void* workspace, uint64_t workspace_size, void* executor, void* stream) {
    return second_phase("aclnnFlaNpuWyFast", workspace, workspace_size, executor, stream);
}

EXPORT int32_t aclnnFlaNpuSolveTrilGetWorkspaceSize(const void* l, const void* akk, uint64_t* workspace_size, void** executor) {
    FakeCall* c = record("aclnnFlaNpuSolveTrilGetWorkspaceSize");
    add_tensor(c, l);
    add_tensor(c, akk);
    return first_phase(c, "aclnnFlaNpuSolveTril", workspace_size, executor);
}

EXPORT int32_t aclnnFlaNpuSolveTril(void* workspace, uint64_t workspace_size, void* executor, void* stream) {
    return second_phase("aclnnFlaNpuSolveTril", workspace, workspace_size, executor, stream);
}

EXPORT int32_t aclnnFlaNpuChunkStateGetWorkspaceSize(const void* w, const void* u, const void* kg, const void* e_last,
                                                     const void* chunk_offsets, const void* h0, const void* h, const void* v_new,
                                                     const void* final_state, int64_t state_v_first, uint64_t* workspace_size,
                                                     void** executor) {
    FakeCall* c = record("aclnnFlaNpuChunkStateGetWorkspaceSize");
    add_tensor(c, w);
    add_tensor(c, u);
    add_tensor(c, kg);
    add_tensor(c, e_last);
    add_tensor(c, chunk_offsets);
    add_tensor(c, h0);
    add_tensor(c, h);
    add_tensor(c, v_new);
    add_tensor(c, final_state);
    if (c != NULL) {
        c->num_ints = 1;
        c->ints[0] = state_v_first;
    }
    return first_phase(c, "aclnnFlaNpuChunkState", workspace_size, executor);
}

EXPORT int32_t aclnnFlaNpuChunkState(void* workspace, uint64_t workspace_size, void* executor, void* stream) {
    return second_phase("aclnnFlaNpuChunkState", workspace, workspace_size, executor, stream);
}

EXPORT int32_t aclnnFlaNpuChunkIntraGetWorkspaceSize(const void* q, const void* k, const void* beta, const void* g,
                                                     int64_t qk_l2norm, double scale, int64_t akk_beta, const void* aqk,
                                                     const void* akk, const void* q_scale, const void* k_scale,
                                                     uint64_t* workspace_size, void** executor) {
    FakeCall* c = record("aclnnFlaNpuChunkIntraGetWorkspaceSize");
    add_tensor(c, q);
    add_tensor(c, k);
    add_tensor(c, beta);
    add_tensor(c, g);
    add_tensor(c, aqk);
    add_tensor(c, akk);
    add_tensor(c, q_scale);
    add_tensor(c, k_scale);
    if (c != NULL) {
        c->num_ints = 2;
        c->ints[0] = qk_l2norm;
        c->ints[1] = akk_beta;
        c->num_floats = 1;
        c->floats[0] = scale;
    }
    return first_phase(c, "aclnnFlaNpuChunkIntra", workspace_size, executor);
}

EXPORT int32_t aclnnFlaNpuChunkIntra(void* workspace, uint64_t workspace_size, void* executor, void* stream) {
    return second_phase("aclnnFlaNpuChunkIntra", workspace, workspace_size, executor, stream);
}

EXPORT int32_t aclnnFlaNpuChunkGateIntraGetWorkspaceSize(const void* q, const void* k, const void* beta, const void* g,
                                                         const void* a_log, const void* dt_bias, const void* chunk_len,
                                                         int64_t gate_form, double lower_bound, int64_t qk_l2norm, double scale,
                                                         int64_t akk_beta, const void* aqk, const void* akk, const void* q_scale,
                                                         const void* k_scale, const void* gate, const void* e_last,
                                                         uint64_t* workspace_size, void** executor) {
    FakeCall* c = record("aclnnFlaNpuChunkGateIntraGetWorkspaceSize");
    const void* tensors[] = {q, k, beta, g, a_log, dt_bias, chunk_len, aqk, akk, q_scale, k_scale, gate, e_last};
    for (size_t i = 0; i < sizeof(tensors) / sizeof(tensors[0]); ++i) add_tensor(c, tensors[i]);
    if (c != NULL) {
        c->num_ints = 3;
        c->ints[0] = gate_form;
        c->ints[1] = qk_l2norm;
        c->ints[2] = akk_beta;
        c->num_floats = 2;
        c->floats[0] = lower_bound;
        c->floats[1] = scale;
    }
    return first_phase(c, "aclnnFlaNpuChunkGateIntra", workspace_size, executor);
}

EXPORT int32_t aclnnFlaNpuChunkGateIntra(void* workspace, uint64_t workspace_size, void* executor, void* stream) {
    return second_phase("aclnnFlaNpuChunkGateIntra", workspace, workspace_size, executor, stream);
}

EXPORT int32_t aclnnFlaNpuChunkStateOutputGetWorkspaceSize(const void* q, const void* k, const void* v, const void* g,
                                                           const void* akk, const void* aqk, const void* e_last,
                                                           const void* chunk_offsets, const void* h0, const void* q_scale,
                                                           const void* k_scale, const void* o, const void* final_state,
                                                           int64_t state_v_first, uint64_t* workspace_size, void** executor) {
    FakeCall* c = record("aclnnFlaNpuChunkStateOutputGetWorkspaceSize");
    add_tensor(c, q);
    add_tensor(c, k);
    add_tensor(c, v);
    add_tensor(c, g);
    add_tensor(c, akk);
    add_tensor(c, aqk);
    add_tensor(c, e_last);
    add_tensor(c, chunk_offsets);
    add_tensor(c, h0);
    add_tensor(c, q_scale);
    add_tensor(c, k_scale);
    add_tensor(c, o);
    add_tensor(c, final_state);
    if (c != NULL) {
        c->num_ints = 1;
        c->ints[0] = state_v_first;
    }
    return first_phase(c, "aclnnFlaNpuChunkStateOutput", workspace_size, executor);
}

EXPORT int32_t aclnnFlaNpuChunkStateOutput(void* workspace, uint64_t workspace_size, void* executor, void* stream) {
    return second_phase("aclnnFlaNpuChunkStateOutput", workspace, workspace_size, executor, stream);
}

EXPORT int32_t aclnnFlaNpuChunkForwardGetWorkspaceSize(const void* q, const void* k, const void* v, const void* g,
                                                       const void* beta, const void* e_last, const void* chunk_offsets,
                                                       const void* h0, int64_t qk_l2norm, double scale, const void* o,
                                                       const void* final_state, int64_t state_v_first, uint64_t* workspace_size,
                                                       void** executor) {
    FakeCall* c = record("aclnnFlaNpuChunkForwardGetWorkspaceSize");
    add_tensor(c, q);
    add_tensor(c, k);
    add_tensor(c, v);
    add_tensor(c, g);
    add_tensor(c, beta);
    add_tensor(c, e_last);
    add_tensor(c, chunk_offsets);
    add_tensor(c, h0);
    add_tensor(c, o);
    add_tensor(c, final_state);
    if (c != NULL) {
        c->num_ints = 2;
        c->ints[0] = qk_l2norm;
        c->ints[1] = state_v_first;
        c->num_floats = 1;
        c->floats[0] = scale;
    }
    return first_phase(c, "aclnnFlaNpuChunkForward", workspace_size, executor);
}

EXPORT int32_t aclnnFlaNpuChunkForward(void* workspace, uint64_t workspace_size, void* executor, void* stream) {
    return second_phase("aclnnFlaNpuChunkForward", workspace, workspace_size, executor, stream);
}

EXPORT int32_t aclnnFlaNpuChunkGateForwardGetWorkspaceSize(const void* q, const void* k, const void* v, const void* g,
                                                           const void* beta, const void* a_log, const void* dt_bias,
                                                           const void* chunk_len, const void* chunk_offsets, const void* h0,
                                                           int64_t gate_form, double lower_bound, int64_t qk_l2norm, double scale,
                                                           const void* o, const void* final_state, int64_t state_v_first,
                                                           uint64_t* workspace_size, void** executor) {
    FakeCall* c = record("aclnnFlaNpuChunkGateForwardGetWorkspaceSize");
    const void* tensors[] = {q, k, v, g, beta, a_log, dt_bias, chunk_len, chunk_offsets, h0, o, final_state};
    for (size_t i = 0; i < sizeof(tensors) / sizeof(tensors[0]); ++i) add_tensor(c, tensors[i]);
    if (c != NULL) {
        c->num_ints = 3;
        c->ints[0] = gate_form;
        c->ints[1] = qk_l2norm;
        c->ints[2] = state_v_first;
        c->num_floats = 2;
        c->floats[0] = lower_bound;
        c->floats[1] = scale;
    }
    return first_phase(c, "aclnnFlaNpuChunkGateForward", workspace_size, executor);
}

EXPORT int32_t aclnnFlaNpuChunkGateForward(void* workspace, uint64_t workspace_size, void* executor, void* stream) {
    return second_phase("aclnnFlaNpuChunkGateForward", workspace, workspace_size, executor, stream);
}
