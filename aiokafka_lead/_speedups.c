/*
 * aiokafka_lead._speedups: optional C versions of the per-record loops. This file: the
 * consumer's two loops and the module; the producer's steps are in _speedups_producer.c,
 * the share consumer's in _speedups_share.c.
 *
 *   decode_records(buf, pos, end, count, base_offset, base_timestamp, log_append_time)
 *       The records of one (decompressed) magic v2 batch as a list of Record tuples;
 *       the same contract as the pure-Python records.batch._decode_records.
 *   build_consumer_records(rows, topic, partition, timestamp_type, leader_epoch)
 *       ConsumerRecord objects for a list of Record tuples (headers shared, as tuples), without running the
 *       dataclass __init__ (its slots are filled directly).
 *
 * Both are set up once by configure(Record, ConsumerRecord, field_names, DecodeError,
 * CorruptRecordError); ABI names the version of that signature and of every function's and
 * type's contract, the producer's included (native.py refuses a stale build).
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

#define CONSUMER_RECORD_FIELDS 12
/* bumped whenever configure() or a function's contract changes */
#define SPEEDUPS_ABI 10

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
    {NULL, NULL, 0, NULL},
};

/* _speedups_producer.c: its types and functions added to the module */
int speedups_add_producer(PyObject *module);
/* _speedups_share.c: the share consumer's functions added to the module */
int speedups_add_share(PyObject *module);
/* _speedups_columns.c: decoded records -> Arrow column buffers */
int speedups_add_columns(PyObject *module);
/* _speedups_produce_wire.c: a Produce request and its answer on the wire */
int speedups_add_produce_wire(PyObject *module);

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
    m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddIntConstant(m, "ABI", SPEEDUPS_ABI) < 0 || speedups_add_producer(m) < 0 ||
        speedups_add_share(m) < 0 ||
        speedups_add_columns(m) < 0 || speedups_add_produce_wire(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
