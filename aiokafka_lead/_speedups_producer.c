/*
 * aiokafka_lead._speedups, the producer's per-record steps (the module and the consumer's
 * loops are in _speedups.c; its ABI covers these too; the Arrow input is in
 * _speedups_producer_columns.c, send()'s common case in _speedups_send.c, what they share
 * in _speedups_producer.h).
 *
 *   RecordsBuffer
 *       The base class of records.builder.RecordBatchBuilder that encodes each appended
 *       record (varints, key, value, headers) into the batch's records section, one record
 *       at a time or the rows of Arrow binary columns at once (append_column); the same
 *       contract as the pure-Python records.builder.PyRecords. Sealed (_sealed_records),
 *       it hands its buffer to a SealedRecords and returns a read-only memoryview of it:
 *       the batch is built from the records without copying them, and the view refers to
 *       the SealedRecords, not back to the builder that holds it.
 *   HandleFields
 *       The fields of producer.batch.DeliveryHandle (its base class): the batch, the record's
 *       index in it, its timestamp, whether it was cancelled; the same as
 *       producer.batch.PyHandleFields, filled without running Python code.
 *   murmur2(data)
 *       Kafka's murmur2 hash (Java's Utils.murmur2, signed int32) of a bytes-like key, for
 *       keyed partitioning; the same as producer.partitioner.py_murmur2.
 *   now_ms()
 *       Wall-clock milliseconds since the epoch (time.time_ns() // 1_000_000), a record's
 *       default timestamp.
 *
 * The pure-Python versions stay the reference: the tests compare both on the same records
 * (hypothesis) and against the Java client's bytes.
 */
#include "_speedups_producer.h"
#include <structmember.h>
#include <time.h>

/* ------------------------------------------------------------------ RecordsBuffer */

static int
blob_get(PyObject *obj, Blob *b, const char *what)
{
    b->held = 0;
    if (obj == Py_None) {
        b->data = NULL;
        b->n = -1;
        return 0;
    }
    if (PyBytes_CheckExact(obj)) {
        b->data = PyBytes_AS_STRING(obj);
        b->n = PyBytes_GET_SIZE(obj);
        return 0;
    }
    if (PyObject_GetBuffer(obj, &b->view, PyBUF_SIMPLE) < 0) {
        PyErr_Format(PyExc_TypeError, "record %s must be bytes-like or None, not %.100s", what,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    b->held = 1;
    b->data = (const char *)b->view.buf;
    b->n = b->view.len;
    return 0;
}

static void
blob_release(Blob *b)
{
    if (b->held) {
        PyBuffer_Release(&b->view);
        b->held = 0;
    }
}


int
records_reserve(RecordsBuffer *self, Py_ssize_t extra)
{
    Py_ssize_t need, cap;
    unsigned char *grown;
    if (extra > PY_SSIZE_T_MAX - self->len) {
        PyErr_NoMemory();
        return -1;
    }
    need = self->len + extra;
    if (need <= self->cap)
        return 0;
    if (self->owner != NULL) {
        PyErr_SetString(PyExc_BufferError, "the records were handed over sealed: they cannot grow");
        return -1;
    }
    cap = self->cap ? self->cap : 1024;
    while (cap < need)
        cap = cap > PY_SSIZE_T_MAX / 2 ? need : cap * 2;
    grown = PyMem_Realloc(self->buf, (size_t)cap);
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    self->buf = grown;
    self->cap = cap;
    return 0;
}

static PyObject *
records_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    RecordsBuffer *self = (RecordsBuffer *)type->tp_alloc(type, 0);
    if (self != NULL) {
        self->max_ts = -1;
        self->limit = Py_HUGE_VAL;
    }
    return (PyObject *)self;
}

static void
records_dealloc(RecordsBuffer *self)
{
    if (self->owner != NULL)
        Py_CLEAR(self->owner); /* frees buf unless a view still holds it */
    else
        PyMem_Free(self->buf);
    self->buf = NULL;
    Py_TYPE(self)->tp_free((PyObject *)self);
}


Py_ssize_t
records_append_blobs(RecordsBuffer *self, long long ts, const Blob *key, const Blob *value)
{
    long long delta;
    Py_ssize_t body, total;
    unsigned char *out;
    if (self->sealed)
        return RECORDS_FULL;
    if (record_delta(self, ts, &delta) < 0)
        return -1;
    body = record_head_size(self, delta, key, value) + 1; /* + the header count, 0 */
    total = varint_size(body) + body;
    if (self->count > 0 && (double)(self->len + total) > self->limit)
        return RECORDS_FULL;
    if (records_reserve(self, total) < 0)
        return -1;
    out = put_record_head(self, body, delta, key, value);
    *out = 0; /* no headers: varint 0 */
    record_written(self, ts, total);
    return self->count - 1;
}

Py_ssize_t
records_append_bytes(RecordsBuffer *self, long long ts, PyObject *key, PyObject *value)
{
    Blob k, v;
    Py_ssize_t index;
    if (blob_get(key, &k, "key") < 0)
        return -1;
    if (blob_get(value, &v, "value") < 0) {
        blob_release(&k);
        return -1;
    }
    index = records_append_blobs(self, ts, &k, &v);
    blob_release(&k);
    blob_release(&v);
    return index;
}

/* append(timestamp_ms, key, value, headers=()) -> the record's offset delta, or None when the
 * batch is sealed or the record would take the records past the limit (never the first). */
static PyObject *
records_append(RecordsBuffer *self, PyObject *const *args, Py_ssize_t nargs)
{
    long long ts, delta;
    Blob key, value;
    PyObject *headers = NULL, *result = NULL;
    Py_ssize_t nheaders = 0, body, total, i;
    Blob *hvalues = NULL;
    const char **hkeys = NULL;
    Py_ssize_t *hkey_lens = NULL;
    unsigned char *out;
    Blob small_values[4];
    const char *small_keys[4];
    Py_ssize_t small_lens[4];

    if (nargs < 3 || nargs > 4) {
        PyErr_SetString(PyExc_TypeError, "append(timestamp_ms, key, value, headers=())");
        return NULL;
    }
    if (self->sealed)
        Py_RETURN_NONE;
    ts = PyLong_AsLongLong(args[0]);
    if (ts == -1 && PyErr_Occurred())
        return NULL;
    if (nargs == 3) {
        Py_ssize_t index = records_append_bytes(self, ts, args[1], args[2]);
        if (index == RECORDS_FULL)
            Py_RETURN_NONE;
        return index < 0 ? NULL : PyLong_FromSsize_t(index);
    }
    if (record_delta(self, ts, &delta) < 0)
        return NULL;
    if (blob_get(args[1], &key, "key") < 0)
        return NULL;
    if (blob_get(args[2], &value, "value") < 0) {
        blob_release(&key);
        return NULL;
    }
    body = record_head_size(self, delta, &key, &value);
    if (nargs == 4) {
        headers = PySequence_Fast(args[3], "record headers must be a sequence of (str, bytes | None)");
        if (headers == NULL)
            goto done;
        nheaders = PySequence_Fast_GET_SIZE(headers);
    }
    body += varint_size(nheaders);
    if (nheaders > 0) {
        if (nheaders <= 4) {
            hvalues = small_values;
            hkeys = small_keys;
            hkey_lens = small_lens;
        }
        else {
            hvalues = PyMem_Calloc((size_t)nheaders, sizeof(Blob));
            hkeys = PyMem_Calloc((size_t)nheaders, sizeof(char *));
            hkey_lens = PyMem_Calloc((size_t)nheaders, sizeof(Py_ssize_t));
            if (hvalues == NULL || hkeys == NULL || hkey_lens == NULL) {
                PyErr_NoMemory();
                nheaders = 0;
                goto done;
            }
        }
        for (i = 0; i < nheaders; i++)
            hvalues[i].held = 0;
        for (i = 0; i < nheaders; i++) {
            PyObject *pair = PySequence_Fast_GET_ITEM(headers, i), *hkey, *hvalue;
            if (PyTuple_CheckExact(pair) && PyTuple_GET_SIZE(pair) == 2) {
                hkey = PyTuple_GET_ITEM(pair, 0);
                hvalue = PyTuple_GET_ITEM(pair, 1);
            }
            else if (PyList_CheckExact(pair) && PyList_GET_SIZE(pair) == 2) {
                hkey = PyList_GET_ITEM(pair, 0);
                hvalue = PyList_GET_ITEM(pair, 1);
            }
            else {
                PyErr_Format(PyExc_TypeError, "header %zd must be a (str, bytes | None) pair", i);
                goto done;
            }
            if (!PyUnicode_Check(hkey)) {
                PyErr_Format(PyExc_TypeError, "header %zd key must be a str, not %.100s", i,
                             Py_TYPE(hkey)->tp_name);
                goto done;
            }
            hkeys[i] = PyUnicode_AsUTF8AndSize(hkey, &hkey_lens[i]);
            if (hkeys[i] == NULL)
                goto done;
            if (blob_get(hvalue, &hvalues[i], "header value") < 0)
                goto done;
            body += varint_size(hkey_lens[i]) + hkey_lens[i] + blob_size(&hvalues[i]);
        }
    }
    total = varint_size(body) + body;
    if (self->count > 0 && (double)(self->len + total) > self->limit) {
        result = Py_None;
        Py_INCREF(result);
        goto done;
    }
    if (records_reserve(self, total) < 0)
        goto done;
    out = put_record_head(self, body, delta, &key, &value);
    out += put_varint(out, nheaders);
    for (i = 0; i < nheaders; i++) {
        out += put_varint(out, hkey_lens[i]);
        memcpy(out, hkeys[i], (size_t)hkey_lens[i]);
        out += hkey_lens[i];
        out += put_blob(out, &hvalues[i]);
    }
    result = PyLong_FromSsize_t(self->count);
    record_written(self, ts, total);
done:
    blob_release(&key);
    blob_release(&value);
    for (i = 0; i < nheaders; i++)
        blob_release(&hvalues[i]);
    if (hvalues != NULL && hvalues != small_values) {
        PyMem_Free(hvalues);
        PyMem_Free((void *)hkeys);
        PyMem_Free(hkey_lens);
    }
    Py_XDECREF(headers);
    return result;
}


static PyObject *
records_bytes(RecordsBuffer *self, PyObject *unused)
{
    return PyBytes_FromStringAndSize((const char *)self->buf, self->len);
}

/* SealedRecords: the sealed records' buffer, handed over by its RecordsBuffer (which keeps
 * a reference and reads it, never writes or moves it again). Its memoryview refers to this
 * object, not to the builder, so a builder holding the view of its own records is no
 * reference cycle: both are freed by reference counting when the batch is. */
typedef struct {
    PyObject_HEAD
    unsigned char *buf;
    Py_ssize_t len;
} SealedRecords;

static int
sealed_getbuffer(SealedRecords *self, Py_buffer *view, int flags)
{
    return PyBuffer_FillInfo(view, (PyObject *)self, self->buf, self->len, 1, flags);
}

static void
sealed_dealloc(SealedRecords *self)
{
    PyMem_Free(self->buf);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyBufferProcs sealed_as_buffer = {.bf_getbuffer = (getbufferproc)sealed_getbuffer};

static PyTypeObject SealedRecordsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "aiokafka_lead._speedups.SealedRecords",
    .tp_basicsize = sizeof(SealedRecords),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A sealed batch's records, read-only (see RecordsBuffer._sealed_records).",
    .tp_dealloc = (destructor)sealed_dealloc,
    .tp_as_buffer = &sealed_as_buffer,
};

/* _sealed_records() -> the records as a read-only memoryview, no copy; later appends
 * return None (as after close) and the buffer never moves again. */
static PyObject *
records_sealed_view(RecordsBuffer *self, PyObject *unused)
{
    self->sealed = 1;
    if (self->owner == NULL) {
        SealedRecords *owner = PyObject_New(SealedRecords, &SealedRecordsType);
        if (owner == NULL)
            return NULL;
        owner->buf = self->buf; /* ownership moves; self->buf stays readable through it */
        owner->len = self->len;
        self->owner = (PyObject *)owner;
    }
    return PyMemoryView_FromObject(self->owner);
}

static PyMethodDef records_methods[] = {
    {"append", (PyCFunction)(void (*)(void))records_append, METH_FASTCALL,
     "append(timestamp_ms, key, value, headers=()) -> offset delta, or None (sealed or full)"},
    {"append_column", (PyCFunction)(void (*)(void))records_append_column, METH_FASTCALL,
     "append_column(timestamp_ms, rows, values, keys, start) -> the first row not appended"},
    {"_records_bytes", (PyCFunction)records_bytes, METH_NOARGS, "the records section so far, as bytes"},
    {"_sealed_records", (PyCFunction)records_sealed_view, METH_NOARGS,
     "seal the records and return them as a read-only memoryview (no copy)"},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef records_members[] = {
    {"_count", T_PYSSIZET, offsetof(RecordsBuffer, count), READONLY, "records appended"},
    {"_records_size", T_PYSSIZET, offsetof(RecordsBuffer, len), READONLY, "bytes of records"},
    {"_base_timestamp", T_LONGLONG, offsetof(RecordsBuffer, base_ts), READONLY, NULL},
    {"_max_timestamp", T_LONGLONG, offsetof(RecordsBuffer, max_ts), READONLY, NULL},
    {"_records_limit", T_DOUBLE, offsetof(RecordsBuffer, limit), 0, NULL},
    {"_sealed", T_BOOL, offsetof(RecordsBuffer, sealed), 0, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject RecordsBufferType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "aiokafka_lead._speedups.RecordsBuffer",
    .tp_basicsize = sizeof(RecordsBuffer),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "The records section of a magic v2 batch being filled (see records.builder).",
    .tp_new = records_new,
    .tp_dealloc = (destructor)records_dealloc,
    .tp_methods = records_methods,
    .tp_members = records_members,
};

/* ------------------------------------------------------------------ HandleFields */

PyObject *
handle_make(PyTypeObject *type, PyObject *batch, Py_ssize_t index, PyObject *timestamp)
{
    HandleFields *self = (HandleFields *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    Py_INCREF(batch);
    self->batch = batch;
    Py_INCREF(timestamp);
    self->timestamp = timestamp;
    self->index = index;
    self->cancelled = 0;
    return (PyObject *)self;
}

static PyObject *
handle_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *batch, *index, *timestamp;
    Py_ssize_t i;

    if ((kwds != NULL && PyDict_GET_SIZE(kwds) != 0) || PyTuple_GET_SIZE(args) != 3) {
        PyErr_SetString(PyExc_TypeError, "DeliveryHandle(batch, index, timestamp)");
        return NULL;
    }
    batch = PyTuple_GET_ITEM(args, 0);
    index = PyTuple_GET_ITEM(args, 1);
    timestamp = PyTuple_GET_ITEM(args, 2);
    i = PyNumber_AsSsize_t(index, PyExc_OverflowError);
    if (i == -1 && PyErr_Occurred())
        return NULL;
    return handle_make(type, batch, i, timestamp);
}

static int
handle_traverse(HandleFields *self, visitproc visit, void *arg)
{
    Py_VISIT(self->batch);
    Py_VISIT(self->timestamp);
    return 0; /* a heap subclass's own traverse visits the type */
}

static int
handle_clear(HandleFields *self)
{
    Py_CLEAR(self->batch);
    Py_CLEAR(self->timestamp);
    return 0;
}

static void
handle_dealloc(HandleFields *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    handle_clear(self);
    tp->tp_free((PyObject *)self);
}

static PyMemberDef handle_members[] = {
    {"_batch", T_OBJECT_EX, offsetof(HandleFields, batch), 0, "the batch holding the record now"},
    {"_index", T_PYSSIZET, offsetof(HandleFields, index), 0, "the record's index in that batch"},
    {"_timestamp", T_OBJECT_EX, offsetof(HandleFields, timestamp), 0, "the record's timestamp (ms)"},
    {"_cancelled", T_BOOL, offsetof(HandleFields, cancelled), 0, "the caller stopped waiting"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject HandleFieldsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "aiokafka_lead._speedups.HandleFields",
    .tp_basicsize = sizeof(HandleFields),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The fields of a producer's DeliveryHandle (see producer/batch.py).",
    .tp_new = handle_new,
    .tp_traverse = (traverseproc)handle_traverse,
    .tp_clear = (inquiry)handle_clear,
    .tp_dealloc = (destructor)handle_dealloc,
    .tp_members = handle_members,
};

/* ------------------------------------------------------------- partition, timestamp */

uint32_t
murmur2_hash(const unsigned char *data, Py_ssize_t length)
{
    const uint32_t m = 0x5BD1E995u;
    uint32_t h = 0x9747B28Cu ^ (uint32_t)length;
    Py_ssize_t end = length & ~(Py_ssize_t)3, i;
    for (i = 0; i < end; i += 4) {
        uint32_t k = (uint32_t)data[i] | ((uint32_t)data[i + 1] << 8) | ((uint32_t)data[i + 2] << 16) |
                     ((uint32_t)data[i + 3] << 24);
        k *= m;
        k ^= k >> 24;
        k *= m;
        h *= m;
        h ^= k;
    }
    switch (length & 3) {
    case 3:
        h ^= (uint32_t)data[end + 2] << 16;
        /* fall through */
    case 2:
        h ^= (uint32_t)data[end + 1] << 8;
        /* fall through */
    case 1:
        h ^= (uint32_t)data[end];
        h *= m;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return h;
}

static PyObject *
murmur2(PyObject *self, PyObject *arg)
{
    Py_buffer view;
    uint32_t h;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    h = murmur2_hash((const unsigned char *)view.buf, view.len);
    PyBuffer_Release(&view);
    return PyLong_FromLong((long)(int32_t)h);
}


int
wall_ms(long long *out)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0) {
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    *out = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    return 0;
}

static PyObject *
now_ms(PyObject *self, PyObject *unused)
{
    long long ms;
    if (wall_ms(&ms) < 0)
        return NULL;
    return PyLong_FromLongLong(ms);
}

/* ------------------------------------------------------------------------ set-up */

static PyMethodDef producer_functions[] = {
    {"murmur2", murmur2, METH_O, "murmur2(data) -> Kafka's murmur2 hash as a signed int32"},
    {"key_partitions", (PyCFunction)(void (*)(void))key_partitions, METH_FASTCALL,
     "key_partitions(keys, rows, num_partitions) -> int32 partition per row (-1: null key), as bytes"},
    {"now_ms", now_ms, METH_NOARGS, "now_ms() -> wall-clock milliseconds since the epoch"},
    {NULL, NULL, 0, NULL},
};

int speedups_add_producer(PyObject *module);

/* Called by PyInit__speedups: the producer's types and functions, added to the module. */
int
speedups_add_producer(PyObject *module)
{
    if (PyType_Ready(&SealedRecordsType) < 0 || PyModule_AddType(module, &RecordsBufferType) < 0 ||
        PyModule_AddType(module, &HandleFieldsType) < 0 || speedups_add_send(module, &RecordsBufferType) < 0)
        return -1;
    return PyModule_AddFunctions(module, producer_functions);
}
