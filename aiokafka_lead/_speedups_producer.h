/*
 * What the producer's C steps share (_speedups_producer.c: RecordsBuffer, HandleFields,
 * murmur2; _speedups_producer_columns.c: Arrow binary columns as records and partitions):
 * the records buffer's layout, the record encoding's pieces and the functions one file
 * defines for the other.
 */
#ifndef AIOKAFKA_LEAD_SPEEDUPS_PRODUCER_H
#define AIOKAFKA_LEAD_SPEEDUPS_PRODUCER_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* The records section of one magic v2 batch being filled (records.builder.PyRecords is its
 * pure-Python twin and reference). Appending never reads back what was written; the batch
 * header, compression and CRC are the Python builder's (once per batch). */
typedef struct {
    PyObject_HEAD
    unsigned char *buf;
    Py_ssize_t len;
    Py_ssize_t cap;
    Py_ssize_t count;       /* records appended */
    long long base_ts;      /* first record's timestamp */
    long long max_ts;       /* -1 before the first record */
    double limit;           /* bytes of records a second or later record may not exceed */
    PyObject *owner;        /* once sealed and viewed: the SealedRecords that owns buf */
    char sealed;            /* closed: append() returns None */
} RecordsBuffer;

static inline Py_ssize_t
put_varint(unsigned char *out, int64_t value)
{
    uint64_t v = ((uint64_t)value << 1) ^ (uint64_t)(value >> 63);
    Py_ssize_t n = 0;
    while (v > 0x7F) {
        out[n++] = (unsigned char)((v & 0x7F) | 0x80);
        v >>= 7;
    }
    out[n++] = (unsigned char)v;
    return n;
}

static inline Py_ssize_t
varint_size(int64_t value)
{
    uint64_t v = ((uint64_t)value << 1) ^ (uint64_t)(value >> 63);
    Py_ssize_t n = 1;
    while (v > 0x7F) {
        v >>= 7;
        n++;
    }
    return n;
}

/* A key, value or header value: None (n = -1) or any bytes-like object. */
typedef struct {
    Py_buffer view;
    const char *data;
    Py_ssize_t n;
    int held; /* view must be released */
} Blob;

static inline Py_ssize_t
blob_size(const Blob *b)
{
    return b->n < 0 ? 1 : varint_size(b->n) + b->n;
}

static inline Py_ssize_t
put_blob(unsigned char *out, const Blob *b)
{
    Py_ssize_t n = put_varint(out, b->n);
    if (b->n > 0) {
        memcpy(out + n, b->data, (size_t)b->n);
        n += b->n;
    }
    return n;
}

/* A Py_ssize_t argument: 0, or -1 with the error set. */
static inline int
ssize_arg(PyObject *arg, Py_ssize_t *out)
{
    *out = PyLong_AsSsize_t(arg);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

/* A record's timestamp delta from the batch's first record (0 for the first record). */
static inline int
record_delta(const RecordsBuffer *self, long long ts, long long *delta)
{
    if (self->count == 0) {
        *delta = 0;
        return 0;
    }
    if (__builtin_sub_overflow(ts, self->base_ts, delta)) {
        PyErr_SetString(PyExc_OverflowError, "timestamp delta does not fit in 64 bits");
        return -1;
    }
    return 0;
}

/* The size of a record's body up to its header count: attributes, deltas, key and value. */
static inline Py_ssize_t
record_head_size(const RecordsBuffer *self, long long delta, const Blob *key, const Blob *value)
{
    return 1 + varint_size(delta) + varint_size(self->count) + blob_size(key) + blob_size(value);
}

/* Writes a record's length and head at the buffer's end (room reserved); returns where its
 * header count goes. */
static inline unsigned char *
put_record_head(RecordsBuffer *self, Py_ssize_t body, long long delta, const Blob *key, const Blob *value)
{
    unsigned char *out = self->buf + self->len;
    out += put_varint(out, body);
    *out++ = 0; /* attributes (unused) */
    out += put_varint(out, delta);
    out += put_varint(out, self->count);
    out += put_blob(out, key);
    out += put_blob(out, value);
    return out;
}

/* Counts the record of `total` bytes just written at the buffer's end. */
static inline void
record_written(RecordsBuffer *self, long long ts, Py_ssize_t total)
{
    self->len += total;
    if (self->count == 0)
        self->base_ts = ts;
    if (ts > self->max_ts)
        self->max_ts = ts;
    self->count++;
}

/* The fields of producer.batch.DeliveryHandle (the C base class HandleFields). */
typedef struct {
    PyObject_HEAD
    PyObject *batch;
    PyObject *timestamp;
    Py_ssize_t index;
    char cancelled;
} HandleFields;

/* records_append_bytes: the batch is sealed or the record does not fit (not an error). */
#define RECORDS_FULL (-2)

/* Appends a record without headers: its index in the batch, RECORDS_FULL when the batch is
 * sealed or the record would take the records past the limit (never the first), or -1 with
 * an error set. The _bytes form takes key and value as bytes-like objects or None. */
Py_ssize_t records_append_blobs(RecordsBuffer *self, long long ts, const Blob *key, const Blob *value);
Py_ssize_t records_append_bytes(RecordsBuffer *self, long long ts, PyObject *key, PyObject *value);
/* A new handle of `type` (HandleFields or a subclass adding no fields) for a record. */
PyObject *handle_make(PyTypeObject *type, PyObject *batch, Py_ssize_t index, PyObject *timestamp);
/* Wall-clock milliseconds since the epoch (0, or -1 with OSError set). */
int wall_ms(long long *out);
/* _speedups_send.c: SendPath added to the module (`records`: the RecordsBuffer type). */
int speedups_add_send(PyObject *module, PyTypeObject *records);
/* Makes room for `extra` more bytes at the buffer's end (-1 with MemoryError). */
int records_reserve(RecordsBuffer *self, Py_ssize_t extra);
/* Kafka's murmur2 (Java's Utils.murmur2) of `length` bytes. */
uint32_t murmur2_hash(const unsigned char *data, Py_ssize_t length);

/* The Java client's partition of a key: toPositive(murmur2(key)) % num_partitions (> 0). */
static inline Py_ssize_t
key_partition(const char *key, Py_ssize_t length, Py_ssize_t num_partitions)
{
    return (Py_ssize_t)((murmur2_hash((const unsigned char *)key, length) & 0x7FFFFFFFu) %
                        (uint32_t)num_partitions);
}
/* RecordsBuffer.append_column and the module's key_partitions (_speedups_producer_columns.c). */
PyObject *records_append_column(RecordsBuffer *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *key_partitions(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

#endif
