/*
 * aiokafka_lead._speedups: optional C versions of the per-record loops.
 *
 *   RecordsBuffer
 *       The producer's per-record step: the base class of records.builder.RecordBatchBuilder
 *       that encodes each appended record (varints, key, value, headers) into the batch's
 *       records section; the same contract as the pure-Python records.builder.PyRecords.
 *   decode_records(buf, pos, end, count, base_offset, base_timestamp, log_append_time)
 *       The records of one (decompressed) magic v2 batch as a list of Record tuples;
 *       the same contract as the pure-Python records.batch._decode_records.
 *   build_consumer_records(rows, topic, partition, timestamp_type, leader_epoch)
 *       ConsumerRecord objects for a list of Record tuples (headers shared, as tuples), without running the
 *       dataclass __init__ (its slots are filled directly).
 *
 * Both are set up once by configure(Record, ConsumerRecord, field_names, DecodeError,
 * CorruptRecordError); ABI names that signature's version (native.py refuses a stale build).
 *
 * Safety: every read is bounds-checked against the end of the current record (itself
 * checked against the end of the batch), so hostile bytes raise DecodeError and never
 * read outside the buffer. Nothing is handed out unless the whole batch decoded.
 * The pure-Python versions stay the reference: the test suite runs both on the same
 * inputs (golden bytes, round trips, bit flips and truncations).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <time.h>

#define CONSUMER_RECORD_FIELDS 12
/* bumped whenever configure() or a function's contract changes */
#define SPEEDUPS_ABI 3

static PyTypeObject *record_type = NULL;          /* records.batch.Record (a NamedTuple) */
static PyTypeObject *consumer_record_type = NULL; /* structs.ConsumerRecord (slots dataclass) */
static Py_ssize_t consumer_record_offsets[CONSUMER_RECORD_FIELDS];
static PyObject *decode_error = NULL;             /* errors.DecodeError */
static PyObject *corrupt_error = NULL;            /* errors.CorruptRecordError */
static PyObject *minus_one = NULL;

/* Minimum bytes of one record: length, attributes, timestampDelta, offsetDelta,
 * key length, value length, header count. */
#define MIN_RECORD_SIZE 7

static int
fail(const char *message)
{
    PyErr_SetString(decode_error, message);
    return -1;
}

/* A zigzag varint of at most max_bytes bytes at buf[*pos], before limit. */
static int
read_varint(const unsigned char *buf, Py_ssize_t *pos, Py_ssize_t limit, int max_bytes, int64_t *out)
{
    uint64_t result = 0;
    int shift = 0;
    Py_ssize_t p = *pos;
    Py_ssize_t last = p + max_bytes;

    for (;;) {
        unsigned int b;
        if (p >= limit)
            return fail("truncated varint");
        if (p >= last)
            return fail("varint too long");
        b = buf[p++];
        if (shift == 63 && (b & 0x7E))
            return fail("varlong overflows 64 bits");
        result |= (uint64_t)(b & 0x7F) << shift;
        if (b < 0x80) {
            *out = (int64_t)(result >> 1) ^ -(int64_t)(result & 1);
            *pos = p;
            return 0;
        }
        shift += 7;
    }
}

/* base + delta as a Python int (bigint arithmetic only if int64 would overflow). */
static PyObject *
add_delta(int64_t base, int64_t delta)
{
    int64_t sum;
    PyObject *a, *b, *r;
    if (!__builtin_add_overflow(base, delta, &sum))
        return PyLong_FromLongLong(sum);
    a = PyLong_FromLongLong(base);
    b = PyLong_FromLongLong(delta);
    r = (a && b) ? PyNumber_Add(a, b) : NULL;
    Py_XDECREF(a);
    Py_XDECREF(b);
    return r;
}

/* A nullable byte string of length n at buf[*pos] (n == -1: None); bounded by limit. */
static PyObject *
read_nullable_bytes(const unsigned char *buf, Py_ssize_t *pos, Py_ssize_t limit, int64_t n,
                    const char *what)
{
    PyObject *out;
    if (n == -1)
        Py_RETURN_NONE;
    if (n < -1) {
        PyErr_Format(decode_error, "invalid %s length %lld", what, (long long)n);
        return NULL;
    }
    if (n > limit - *pos) {
        PyErr_Format(decode_error, "%s length %lld runs past the end of its record", what, (long long)n);
        return NULL;
    }
    out = PyBytes_FromStringAndSize((const char *)buf + *pos, (Py_ssize_t)n);
    *pos += (Py_ssize_t)n;
    return out;
}

static PyObject *
read_headers(const unsigned char *buf, Py_ssize_t *pos, Py_ssize_t rec_end)
{
    int64_t count, n;
    Py_ssize_t i;
    PyObject *headers;

    if (read_varint(buf, pos, rec_end, 5, &count) < 0)
        return NULL;
    if (count == 0)
        return PyTuple_New(0);
    if (count < 0 || count * 2 > rec_end - *pos) {
        PyErr_Format(decode_error, "invalid header count %lld", (long long)count);
        return NULL;
    }
    headers = PyTuple_New((Py_ssize_t)count);
    if (headers == NULL)
        return NULL;
    for (i = 0; i < count; i++) {
        PyObject *key, *value, *pair;
        if (read_varint(buf, pos, rec_end, 5, &n) < 0)
            goto error;
        if (n < 0 || n > rec_end - *pos) {
            PyErr_Format(decode_error, "invalid header key length %lld", (long long)n);
            goto error;
        }
        key = PyUnicode_DecodeUTF8((const char *)buf + *pos, (Py_ssize_t)n, NULL);
        if (key == NULL)
            goto error;
        *pos += (Py_ssize_t)n;
        if (read_varint(buf, pos, rec_end, 5, &n) < 0) {
            Py_DECREF(key);
            goto error;
        }
        value = read_nullable_bytes(buf, pos, rec_end, n, "header value");
        if (value == NULL) {
            Py_DECREF(key);
            goto error;
        }
        pair = PyTuple_New(2);
        if (pair == NULL) {
            Py_DECREF(key);
            Py_DECREF(value);
            goto error;
        }
        PyTuple_SET_ITEM(pair, 0, key);
        PyTuple_SET_ITEM(pair, 1, value);
        PyObject_GC_UnTrack(pair); /* immutable and holds no containers: never in a cycle */
        PyTuple_SET_ITEM(headers, i, pair);
    }
    PyObject_GC_UnTrack(headers);
    return headers;
error:
    Py_DECREF(headers);
    return NULL;
}

/* One record at buf[*pos] (bounded by end) as a Record tuple; its offset delta must be
 * above *last_delta (offsets increase within a batch), which it then becomes. */
static PyObject *
read_record(const unsigned char *buf, Py_ssize_t *pos, Py_ssize_t end, int64_t base_offset,
            int64_t base_timestamp, PyObject *log_append_time, int64_t *last_delta)
{
    int64_t length, timestamp_delta, offset_delta, n;
    Py_ssize_t rec_end;
    PyObject *offset = NULL, *timestamp = NULL, *key = NULL, *value = NULL, *headers = NULL;
    PyObject *record;

    if (read_varint(buf, pos, end, 5, &length) < 0)
        return NULL;
    if (length < MIN_RECORD_SIZE - 1 || length > end - *pos) {
        PyErr_Format(decode_error, "invalid record length %lld", (long long)length);
        return NULL;
    }
    rec_end = *pos + (Py_ssize_t)length;
    *pos += 1; /* attributes: unused */
    if (read_varint(buf, pos, rec_end, 10, &timestamp_delta) < 0)
        return NULL;
    if (read_varint(buf, pos, rec_end, 5, &offset_delta) < 0)
        return NULL;
    if (offset_delta <= *last_delta) {
        PyErr_Format(corrupt_error,
                     "offset delta %lld follows %lld: offsets in a batch must increase",
                     (long long)offset_delta, (long long)*last_delta);
        return NULL;
    }
    *last_delta = offset_delta;
    if (read_varint(buf, pos, rec_end, 5, &n) < 0)
        return NULL;
    key = read_nullable_bytes(buf, pos, rec_end, n, "key");
    if (key == NULL)
        return NULL;
    if (read_varint(buf, pos, rec_end, 5, &n) < 0)
        goto error;
    value = read_nullable_bytes(buf, pos, rec_end, n, "value");
    if (value == NULL)
        goto error;
    headers = read_headers(buf, pos, rec_end);
    if (headers == NULL)
        goto error;
    if (*pos != rec_end) {
        fail("record length does not match its fields");
        goto error;
    }
    offset = add_delta(base_offset, offset_delta);
    if (offset == NULL)
        goto error;
    if (log_append_time != Py_None) {
        timestamp = log_append_time;
        Py_INCREF(timestamp);
    }
    else if ((timestamp = add_delta(base_timestamp, timestamp_delta)) == NULL)
        goto error;
    record = record_type->tp_alloc(record_type, 5);
    if (record == NULL)
        goto error;
    PyTuple_SET_ITEM(record, 0, offset);
    PyTuple_SET_ITEM(record, 1, timestamp);
    PyTuple_SET_ITEM(record, 2, key);
    PyTuple_SET_ITEM(record, 3, value);
    PyTuple_SET_ITEM(record, 4, headers);
    /* Immutable down to its leaves (ints, bytes, str, None, tuples of them): it can never be
     * part of a reference cycle, so the cyclic GC need not walk it (CPython itself untracks
     * such exact tuples at their first collection; a subclass it leaves tracked). */
    PyObject_GC_UnTrack(record);
    return record;
error:
    Py_XDECREF(offset);
    Py_XDECREF(timestamp);
    Py_XDECREF(key);
    Py_XDECREF(value);
    Py_XDECREF(headers);
    return NULL;
}

static int
require_configured(void)
{
    if (record_type == NULL || decode_error == NULL || corrupt_error == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "aiokafka_lead._speedups.configure() was not called");
        return -1;
    }
    return 0;
}

static PyObject *
decode_records(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t pos, end, i;
    long long count, base_offset, base_timestamp;
    int64_t last_delta = -1;
    PyObject *log_append_time, *records = NULL;
    const unsigned char *buf;

    if (require_configured() < 0)
        return NULL;
    if (!PyArg_ParseTuple(args, "y*nnLLLO:decode_records", &view, &pos, &end, &count, &base_offset,
                          &base_timestamp, &log_append_time))
        return NULL;
    buf = (const unsigned char *)view.buf;
    if (pos < 0 || end < pos || end > view.len) {
        PyErr_SetString(PyExc_ValueError, "decode_records: pos/end outside the buffer");
        goto done;
    }
    if (count < 0 || count > (end - pos) / MIN_RECORD_SIZE) {
        PyErr_Format(decode_error, "record count %lld cannot fit in %zd bytes", count, end - pos);
        goto done;
    }
    if (log_append_time != Py_None && !PyLong_Check(log_append_time)) {
        PyErr_SetString(PyExc_TypeError, "log_append_time must be an int or None");
        goto done;
    }
    records = PyList_New((Py_ssize_t)count);
    if (records == NULL)
        goto done;
    for (i = 0; i < count; i++) {
        PyObject *record =
            read_record(buf, &pos, end, base_offset, base_timestamp, log_append_time, &last_delta);
        if (record == NULL) {
            Py_CLEAR(records);
            goto done;
        }
        PyList_SET_ITEM(records, i, record);
    }
    if (pos != end) {
        PyErr_Format(decode_error, "%zd unexpected bytes after %lld records", end - pos, count);
        Py_CLEAR(records);
    }
done:
    PyBuffer_Release(&view);
    return records;
}

/* ------------------------------------------------------------------ ConsumerRecord */

static inline void
set_slot(PyObject *obj, int field, PyObject *value)
{
    /* The object is fresh (slots NULL); the reference is stolen. */
    *(PyObject **)((char *)obj + consumer_record_offsets[field]) = value;
}

static PyObject *
serialized_size(PyObject *data)
{
    Py_ssize_t n;
    if (data == Py_None) {
        Py_INCREF(minus_one);
        return minus_one;
    }
    n = PyBytes_Check(data) ? PyBytes_GET_SIZE(data) : PyObject_Size(data);
    return n < 0 ? NULL : PyLong_FromSsize_t(n);
}

static PyObject *
build_consumer_records(PyObject *self, PyObject *args)
{
    PyObject *rows, *topic, *partition, *timestamp_type, *leader_epoch, *out;
    Py_ssize_t i, n;

    if (consumer_record_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "aiokafka_lead._speedups.configure() was not called");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O!UO!O!O!:build_consumer_records", &PyList_Type, &rows, &topic,
                          &PyLong_Type, &partition, &PyLong_Type, &timestamp_type, &PyLong_Type,
                          &leader_epoch))
        return NULL;
    n = PyList_GET_SIZE(rows);
    out = PyList_New(n);
    if (out == NULL)
        return NULL;
    for (i = 0; i < n; i++) {
        PyObject *row = PyList_GET_ITEM(rows, i);
        PyObject *key, *value, *headers, *key_size, *value_size, *header_list, *obj;
        if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) != 5) {
            PyErr_SetString(PyExc_TypeError, "build_consumer_records: rows must be Record tuples");
            goto error;
        }
        key = PyTuple_GET_ITEM(row, 2);
        value = PyTuple_GET_ITEM(row, 3);
        headers = PyTuple_GET_ITEM(row, 4);
        key_size = serialized_size(key);
        if (key_size == NULL)
            goto error;
        value_size = serialized_size(value);
        if (value_size == NULL) {
            Py_DECREF(key_size);
            goto error;
        }
        if (PyTuple_CheckExact(headers)) {
            header_list = headers; /* immutable: shared with the Record */
            Py_INCREF(header_list);
        }
        else
            header_list = PySequence_Tuple(headers);
        if (header_list == NULL) {
            Py_DECREF(key_size);
            Py_DECREF(value_size);
            goto error;
        }
        obj = consumer_record_type->tp_alloc(consumer_record_type, 0);
        if (obj == NULL) {
            Py_DECREF(key_size);
            Py_DECREF(value_size);
            Py_DECREF(header_list);
            goto error;
        }
        Py_INCREF(topic);
        set_slot(obj, 0, topic);
        Py_INCREF(partition);
        set_slot(obj, 1, partition);
        Py_INCREF(PyTuple_GET_ITEM(row, 0));
        set_slot(obj, 2, PyTuple_GET_ITEM(row, 0));
        Py_INCREF(PyTuple_GET_ITEM(row, 1));
        set_slot(obj, 3, PyTuple_GET_ITEM(row, 1));
        Py_INCREF(timestamp_type);
        set_slot(obj, 4, timestamp_type);
        Py_INCREF(key);
        set_slot(obj, 5, key);
        Py_INCREF(value);
        set_slot(obj, 6, value);
        Py_INCREF(Py_None);
        set_slot(obj, 7, Py_None);
        set_slot(obj, 8, key_size);
        set_slot(obj, 9, value_size);
        set_slot(obj, 10, header_list);
        Py_INCREF(leader_epoch);
        set_slot(obj, 11, leader_epoch);
        PyList_SET_ITEM(out, i, obj);
    }
    return out;
error:
    Py_DECREF(out);
    return NULL;
}

/* ------------------------------------------------------------------ RecordsBuffer */

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
    char sealed;            /* closed: append() returns None */
} RecordsBuffer;

#define MAX_VARINT 10

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

static int
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
    PyMem_Free(self->buf);
    self->buf = NULL;
    Py_TYPE(self)->tp_free((PyObject *)self);
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
    if (self->count == 0)
        delta = 0;
    else if (__builtin_sub_overflow(ts, self->base_ts, &delta)) {
        PyErr_SetString(PyExc_OverflowError, "timestamp delta does not fit in 64 bits");
        return NULL;
    }
    if (blob_get(args[1], &key, "key") < 0)
        return NULL;
    if (blob_get(args[2], &value, "value") < 0) {
        blob_release(&key);
        return NULL;
    }
    body = 1 + varint_size(delta) + varint_size(self->count) + blob_size(&key) + blob_size(&value);
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
    out = self->buf + self->len;
    out += put_varint(out, body);
    *out++ = 0; /* attributes (unused) */
    out += put_varint(out, delta);
    out += put_varint(out, self->count);
    out += put_blob(out, &key);
    out += put_blob(out, &value);
    out += put_varint(out, nheaders);
    for (i = 0; i < nheaders; i++) {
        out += put_varint(out, hkey_lens[i]);
        memcpy(out, hkeys[i], (size_t)hkey_lens[i]);
        out += hkey_lens[i];
        out += put_blob(out, &hvalues[i]);
    }
    self->len += total;
    if (self->count == 0)
        self->base_ts = ts;
    if (ts > self->max_ts)
        self->max_ts = ts;
    result = PyLong_FromSsize_t(self->count);
    self->count++;
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

static PyMethodDef records_methods[] = {
    {"append", (PyCFunction)(void (*)(void))records_append, METH_FASTCALL,
     "append(timestamp_ms, key, value, headers=()) -> offset delta, or None (sealed or full)"},
    {"_records_bytes", (PyCFunction)records_bytes, METH_NOARGS, "the records section so far, as bytes"},
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

typedef struct {
    PyObject_HEAD
    PyObject *batch;
    PyObject *timestamp;
    Py_ssize_t index;
    char cancelled;
} HandleFields;

static PyObject *
handle_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *batch, *index, *timestamp;
    Py_ssize_t i;
    HandleFields *self;

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
    self = (HandleFields *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    Py_INCREF(batch);
    self->batch = batch;
    Py_INCREF(timestamp);
    self->timestamp = timestamp;
    self->index = i;
    self->cancelled = 0;
    return (PyObject *)self;
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

static PyObject *
murmur2(PyObject *self, PyObject *arg)
{
    Py_buffer view;
    const unsigned char *data;
    Py_ssize_t length, end, i;
    const uint32_t m = 0x5BD1E995u;
    uint32_t h;

    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    data = (const unsigned char *)view.buf;
    length = view.len;
    h = 0x9747B28Cu ^ (uint32_t)length;
    end = length & ~(Py_ssize_t)3;
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
    PyBuffer_Release(&view);
    return PyLong_FromLong((long)(int32_t)h);
}

static PyObject *
now_ms(PyObject *self, PyObject *unused)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    return PyLong_FromLongLong((long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

/* ------------------------------------------------------------------------ set-up */

static int
bind_consumer_record(PyTypeObject *cls, PyObject *names)
{
    Py_ssize_t i;
    if (!PyTuple_Check(names) || PyTuple_GET_SIZE(names) != CONSUMER_RECORD_FIELDS) {
        PyErr_Format(PyExc_TypeError, "configure: expected a tuple of %d field names",
                     CONSUMER_RECORD_FIELDS);
        return -1;
    }
    if (cls->tp_itemsize != 0 || cls->tp_alloc == NULL) {
        PyErr_SetString(PyExc_TypeError, "configure: ConsumerRecord must be a fixed-size slots class");
        return -1;
    }
    for (i = 0; i < CONSUMER_RECORD_FIELDS; i++) {
        PyObject *name = PyTuple_GET_ITEM(names, i);
        PyObject *descr = PyDict_GetItemWithError(cls->tp_dict, name);
        PyMemberDef *member;
        if (descr == NULL) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_TypeError, "configure: ConsumerRecord has no slot %R", name);
            return -1;
        }
        if (!Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
            PyErr_Format(PyExc_TypeError, "configure: ConsumerRecord.%U is not a slot", name);
            return -1;
        }
        member = ((PyMemberDescrObject *)descr)->d_member;
        if (member->type != T_OBJECT_EX || (member->flags & READONLY) || member->offset <= 0 ||
            member->offset + (Py_ssize_t)sizeof(PyObject *) > cls->tp_basicsize) {
            PyErr_Format(PyExc_TypeError, "configure: unexpected layout of slot %U", name);
            return -1;
        }
        consumer_record_offsets[i] = member->offset;
    }
    return 0;
}

static PyObject *
configure(PyObject *self, PyObject *args)
{
    PyTypeObject *rec, *crec;
    PyObject *names, *error, *corrupt;

    if (!PyArg_ParseTuple(args, "O!O!OOO:configure", &PyType_Type, &rec, &PyType_Type, &crec, &names,
                          &error, &corrupt))
        return NULL;
    if (!PyType_IsSubtype(rec, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "configure: Record must be a tuple subclass");
        return NULL;
    }
    if (!PyExceptionClass_Check(error) || !PyExceptionClass_Check(corrupt)) {
        PyErr_SetString(PyExc_TypeError,
                        "configure: DecodeError and CorruptRecordError must be exception classes");
        return NULL;
    }
    if (bind_consumer_record(crec, names) < 0)
        return NULL;
    Py_INCREF(rec);
    Py_XSETREF(record_type, rec);
    Py_INCREF(crec);
    Py_XSETREF(consumer_record_type, crec);
    Py_INCREF(error);
    Py_XSETREF(decode_error, error);
    Py_INCREF(corrupt);
    Py_XSETREF(corrupt_error, corrupt);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(Record, ConsumerRecord, field_names, DecodeError, CorruptRecordError): set up the "
     "module once."},
    {"decode_records", decode_records, METH_VARARGS,
     "decode_records(buf, pos, end, count, base_offset, base_timestamp, log_append_time) -> list"},
    {"build_consumer_records", build_consumer_records, METH_VARARGS,
     "build_consumer_records(rows, topic, partition, timestamp_type, leader_epoch) -> list"},
    {"murmur2", murmur2, METH_O, "murmur2(data) -> Kafka's murmur2 hash as a signed int32"},
    {"now_ms", now_ms, METH_NOARGS, "now_ms() -> wall-clock milliseconds since the epoch"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "aiokafka_lead._speedups",
    "Optional C versions of the per-record loops (see _speedups.c).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    PyObject *m;
    if (minus_one == NULL && (minus_one = PyLong_FromLong(-1)) == NULL)
        return NULL;
    if (PyType_Ready(&RecordsBufferType) < 0 || PyType_Ready(&HandleFieldsType) < 0)
        return NULL;
    m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddIntConstant(m, "ABI", SPEEDUPS_ABI) < 0 ||
        PyModule_AddType(m, &RecordsBufferType) < 0 || PyModule_AddType(m, &HandleFieldsType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
