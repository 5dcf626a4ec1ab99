/*
 * opbox.h: the op plugin C ABI, version 1.
 *
 * The types mirror runtime/src/abi/plugin_v1.rs field for field (its docs are the reference);
 * tests/plugin_header.rs checks every size, offset and constant here against the Rust side with
 * this machine's C compiler, and compiles this header as C11 and C++17.
 *
 * A plugin exports one function:
 *
 *     OPBOX_EXPORT const OpboxPluginV1* opbox_plugin_v1(const OpboxHostV1* host);
 *
 * It keeps `host` (valid for the whole process) and returns a static descriptor, or NULL after
 * host->set_error() to refuse the host. The host then calls the descriptor's `register`, in
 * which the plugin defines its libraries, ops and kernels through the host table.
 *
 * Versions are packed as major << 48 | minor << 32 | patch. Tables only grow at the end within a
 * major version. Define OPBOX_TARGET_VERSION (e.g. to OPBOX_ABI_V1_0) before including this
 * header to build against an older ABI: fields added later are then not declared, so using them
 * fails to compile. A plugin that targets an older version but may use a newer host function
 * checks OPBOX_HOST_HAS(host, field) at run time and falls back when it is absent.
 *
 * Ownership: a kernel's inputs are borrowed for the call (a tensor it keeps is retained through
 * its vtable); its outputs are owned and carry their maker's release function. Errors: return a
 * status and set the text with host->set_error(); never let a C++ exception leave a function the
 * host calls.
 */
#ifndef OPBOX_H
#define OPBOX_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* `0ULL +` rather than a cast, so that #if can compare versions. */
#define OPBOX_VERSION_PACK(major, minor, patch) \
    (((0ULL + (major)) << 48) | ((0ULL + (minor)) << 32) | (0ULL + (patch)))
#define OPBOX_VERSION_MAJOR(v) ((uint16_t)((v) >> 48))
#define OPBOX_VERSION_MINOR(v) ((uint16_t)((v) >> 32))

#define OPBOX_ABI_V1_0 OPBOX_VERSION_PACK(1, 0, 0)
#define OPBOX_ABI_V1_1 OPBOX_VERSION_PACK(1, 1, 0)
#define OPBOX_ABI_V1_2 OPBOX_VERSION_PACK(1, 2, 0)
/* 1.3: a kernel returning one of its tensor inputs unchanged may write that input's header, as
 * lent (not retained), into the output slot; the host takes its own reference. Same table. */
#define OPBOX_ABI_V1_3 OPBOX_VERSION_PACK(1, 3, 0)
/* 1.4: OpboxImplDesc.kernel_in_place, the same kernel taking its inputs as the host holds them.
 * Same table. */
#define OPBOX_ABI_V1_4 OPBOX_VERSION_PACK(1, 4, 0)
/* 1.5: OpboxHostV1.tensor_from_bytes. */
#define OPBOX_ABI_V1_5 OPBOX_VERSION_PACK(1, 5, 0)
/* 1.6: OpboxHostV1.tensor_to. */
#define OPBOX_ABI_V1_6 OPBOX_VERSION_PACK(1, 6, 0)
#define OPBOX_ABI_VERSION OPBOX_ABI_V1_6

#ifndef OPBOX_TARGET_VERSION
#define OPBOX_TARGET_VERSION OPBOX_ABI_VERSION
#endif

#if defined(_WIN32)
#define OPBOX_EXPORT __declspec(dllexport)
#else
#define OPBOX_EXPORT __attribute__((visibility("default")))
#endif

/* Statuses. */
#define OPBOX_OK 0
#define OPBOX_ERROR 1
#define OPBOX_PANIC 2

/* Value tags: the numbers of opbox's `Tag`, frozen. */
#define OPBOX_TAG_NONE 0
#define OPBOX_TAG_BOOL 1
#define OPBOX_TAG_INT 2
#define OPBOX_TAG_FLOAT 3
#define OPBOX_TAG_STR 4
#define OPBOX_TAG_TENSOR 5
#define OPBOX_TAG_LIST 6
#define OPBOX_TAG_DTYPE 7
#define OPBOX_TAG_DEVICE 8
#define OPBOX_TAG_SCALAR 9

#define OPBOX_LIBRARY_DEF 0
#define OPBOX_LIBRARY_FRAGMENT 1

#define OPBOX_TENSOR_FLAG_READ_ONLY 1

/* DLPack's device types and dtype codes (the tensor header is DLPack-shaped). */
#define OPBOX_DL_CPU 1
#define OPBOX_DL_CUDA 2
#define OPBOX_DL_INT 0
#define OPBOX_DL_UINT 1
#define OPBOX_DL_FLOAT 2
#define OPBOX_DL_BFLOAT 4
#define OPBOX_DL_BOOL 6

/* DLPack's DLDevice, DLDataType and DLTensor, under names that do not clash with dlpack.h. */
typedef struct OpboxDLDevice {
    int32_t device_type;
    int32_t device_id;
} OpboxDLDevice;

typedef struct OpboxDLDataType {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} OpboxDLDataType;

typedef struct OpboxDLTensor {
    void* data;
    OpboxDLDevice device;
    int32_t ndim;
    OpboxDLDataType dtype;
    int64_t* shape;   /* read-only */
    int64_t* strides; /* read-only, in elements */
    uint64_t byte_offset;
} OpboxDLTensor;

typedef struct OpboxValue {
    uint32_t tag;
    uint32_t aux;
    uint64_t payload;
} OpboxValue;

typedef struct OpboxStrRef {
    const char* data;
    size_t len;
} OpboxStrRef;

typedef struct OpboxString {
    const char* data;
    size_t len;
    void (*release)(struct OpboxString* self); /* NULL when borrowed */
    void* ctx;
} OpboxString;

typedef struct OpboxList {
    uint32_t elem_tag; /* OPBOX_TAG_INT (int64_t), _FLOAT (double) or _BOOL (uint8_t) */
    uint32_t reserved;
    const void* data;
    size_t len;
    void (*release)(struct OpboxList* self); /* NULL when borrowed */
    void* ctx;
} OpboxList;

struct OpboxTensor;

typedef struct OpboxTensorVTable {
    uint64_t size;
    /* An owned reference to the same tensor (this header, or a new one); NULL on failure. */
    struct OpboxTensor* (*retain)(struct OpboxTensor* self);
    /* Gives up one owned reference; never called on a borrowed header. */
    void (*release)(struct OpboxTensor* self);
} OpboxTensorVTable;

typedef struct OpboxTensor {
    const OpboxTensorVTable* vtable;
    void* manager_ctx;
    uint64_t refcount; /* the maker's; 0 for a borrowed header */
    uint64_t flags;
    OpboxDLTensor dl;
} OpboxTensor;

/* stack[0, num_args) borrowed inputs; stack[num_args, num_args + num_outputs) receive owned
 * outputs (they hold OPBOX_TAG_NONE on entry). */
typedef int32_t (*OpboxKernelFn)(void* ctx, OpboxValue* stack, uint64_t num_args,
                                 uint64_t num_outputs);

typedef struct OpboxLibraryDesc {
    uint64_t size;
    uint32_t kind; /* OPBOX_LIBRARY_DEF or OPBOX_LIBRARY_FRAGMENT */
    uint32_t line;
    OpboxStrRef name_space;
    OpboxStrRef file;
} OpboxLibraryDesc;

typedef struct OpboxOpDesc {
    uint64_t size;
    uint32_t line;
    uint32_t reserved;
    OpboxStrRef schema;
} OpboxOpDesc;

typedef struct OpboxImplDesc {
    uint64_t size;
    OpboxStrRef op;  /* "ns::name[.overload]" */
    OpboxStrRef key; /* "CPU", "CUDA", "Meta", "CompositeExplicit" */
    OpboxKernelFn kernel;
    void* ctx;
    OpboxStrRef function;
    OpboxStrRef file;
    uint32_t line;
    uint32_t reserved;
#if OPBOX_TARGET_VERSION >= OPBOX_ABI_V1_4
    /* 1.4, or NULL: the same kernel, which the host may call instead for an op whose arguments
     * and returns are all tensors and plain values. Its tensor inputs are headers the host owns
     * and keeps through the call (never released, never written back unretained: every tensor
     * output is owned), and a tensor input's aux is reserved. */
    OpboxKernelFn kernel_in_place;
#endif
} OpboxImplDesc;

typedef struct OpboxRegistrar OpboxRegistrar;

typedef struct OpboxHostV1 {
    uint64_t size;
    uint64_t version;
    uint64_t opbox_version;
    void (*set_error)(const char* data, size_t len);
    size_t (*last_error)(OpboxStrRef* out);
    int32_t (*library)(OpboxRegistrar* reg, const OpboxLibraryDesc* desc);
    int32_t (*def)(OpboxRegistrar* reg, const OpboxOpDesc* desc);
    int32_t (*impl_kernel)(OpboxRegistrar* reg, const OpboxImplDesc* desc);
    int32_t (*tensor_empty)(const int64_t* shape, int32_t ndim, OpboxDLDataType dtype,
                            OpboxDLDevice device, OpboxTensor** out);
    int32_t (*call_op)(const char* name, size_t name_len, const OpboxValue* args,
                       uint64_t num_args, OpboxValue* outs, uint64_t num_outputs);
    int32_t (*op_schema)(const char* name, size_t name_len, OpboxString** out);
#if OPBOX_TARGET_VERSION >= OPBOX_ABI_V1_1
    void (*warn)(const char* data, size_t len); /* 1.1 */
#endif
#if OPBOX_TARGET_VERSION >= OPBOX_ABI_V1_2
    /* 1.2: the CUstream the host made current for CUDA device `device` on this thread, or
     * NULL (the legacy default stream); queue the plugin's CUDA work there. */
    int32_t (*current_stream)(int32_t device, void** out);
#endif
#if OPBOX_TARGET_VERSION >= OPBOX_ABI_V1_5
    /* 1.5: a new contiguous CPU tensor of `shape` and `dtype` in the host's memory holding a
     * copy of the `len` bytes at `data` (exactly the shape's size), owned by the caller. */
    int32_t (*tensor_from_bytes)(const void* data, size_t len, const int64_t* shape,
                                 int32_t ndim, OpboxDLDataType dtype, OpboxTensor** out);
#endif
#if OPBOX_TARGET_VERSION >= OPBOX_ABI_V1_6
    /* 1.6: `t` (borrowed) on `device`: a contiguous copy made on the host's current stream and
     * waited for, or `t` itself when it is there already; owned by the caller. */
    int32_t (*tensor_to)(OpboxTensor* t, OpboxDLDevice device, OpboxTensor** out);
#endif
} OpboxHostV1;

/* True when the host's table has `field` (one added after 1.0). */
#define OPBOX_HOST_HAS(host, field) \
    ((host)->size >= offsetof(OpboxHostV1, field) + sizeof((host)->field))

typedef struct OpboxPluginV1 {
    uint64_t size;
    uint64_t abi_version;      /* what the plugin was built against */
    uint64_t min_host_version; /* the oldest host ABI it runs on */
    uint64_t opbox_version;    /* 0 when not built with opbox's crates */
    const char* name;
    int32_t (*register_ops)(OpboxRegistrar* reg);
} OpboxPluginV1;

typedef const OpboxPluginV1* (*OpboxEntryV1)(const OpboxHostV1* host);

/* Helpers. */

static inline OpboxStrRef opbox_str(const char* s) {
    OpboxStrRef r;
    r.data = s;
    r.len = strlen(s);
    return r;
}

static inline void opbox_set_error(const OpboxHostV1* host, const char* message) {
    host->set_error(message, strlen(message));
}

static inline OpboxValue opbox_value(uint32_t tag, uint64_t payload) {
    OpboxValue v;
    v.tag = tag;
    v.aux = 0;
    v.payload = payload;
    return v;
}

static inline OpboxValue opbox_value_int(int64_t x) {
    return opbox_value(OPBOX_TAG_INT, (uint64_t)x);
}

static inline OpboxValue opbox_value_tensor(OpboxTensor* t) {
    return opbox_value(OPBOX_TAG_TENSOR, (uint64_t)(uintptr_t)t);
}

static inline OpboxTensor* opbox_as_tensor(OpboxValue v) {
    return v.tag == OPBOX_TAG_TENSOR ? (OpboxTensor*)(uintptr_t)v.payload : NULL;
}

static inline int opbox_as_int(OpboxValue v, int64_t* out) {
    if (v.tag != OPBOX_TAG_INT) {
        return 0;
    }
    *out = (int64_t)v.payload;
    return 1;
}

static inline int64_t opbox_numel(const OpboxTensor* t) {
    int64_t n = 1;
    int32_t d;
    for (d = 0; d < t->dl.ndim; d++) {
        n *= t->dl.shape[d];
    }
    return n;
}

/* The element offset (in elements, from data + byte_offset) of the k-th element in row-major
 * order. */
static inline int64_t opbox_element_offset(const OpboxTensor* t, int64_t k) {
    int64_t offset = 0;
    int32_t d;
    for (d = t->dl.ndim - 1; d >= 0; d--) {
        int64_t size = t->dl.shape[d];
        offset += (k % size) * t->dl.strides[d];
        k /= size;
    }
    return offset;
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* OPBOX_H */
