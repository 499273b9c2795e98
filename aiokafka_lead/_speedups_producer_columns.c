/*
 * aiokafka_lead._speedups, the producer's Arrow input: rows of Arrow binary columns (pyarrow's
 * buffers, as the Spark writer hands them on) appended as records and partitioned by key.
 *
 *   RecordsBuffer.append_column(timestamp_ms, rows, values, keys, start)
 *       The rows from start on, as records without headers, until the batch is full; the
 *       same as records.builder.PyRecords.append_column.
 *   key_partitions(keys, rows, num_partitions)
 *       The Java client's partition of every key of an Arrow binary column (-1: null), as
 *       int32s; the same as producer.partitioner.py_key_partitions.
 */
#include "_speedups_producer.h"

/* An Arrow binary column as append_column() takes it: a tuple (validity or None, offsets,
 * data, array offset, large) of buffer-protocol objects and ints (the array's buffers as
 * pyarrow gives them; large: 64-bit offsets). None: every row null. */
typedef struct {
    Py_buffer validity, offsets, data;
    int has_validity, present, large;
    Py_ssize_t base;
} ArrowBinary;

static void
arrow_binary_release(ArrowBinary *c)
{
    if (!c->present)
        return;
    if (c->has_validity)
        PyBuffer_Release(&c->validity);
    PyBuffer_Release(&c->offsets);
    PyBuffer_Release(&c->data);
    c->present = 0;
}

static int
arrow_binary_get(PyObject *spec, ArrowBinary *c, Py_ssize_t rows, const char *what)
{
    PyObject *validity, *offsets, *data;
    Py_ssize_t width, need;
    memset(c, 0, sizeof(*c));
    if (spec == Py_None)
        return 0;
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 5) {
        PyErr_Format(PyExc_TypeError, "the %s column must be None or (validity, offsets, data, offset, large)",
                     what);
        return -1;
    }
    validity = PyTuple_GET_ITEM(spec, 0);
    offsets = PyTuple_GET_ITEM(spec, 1);
    data = PyTuple_GET_ITEM(spec, 2);
    if (ssize_arg(PyTuple_GET_ITEM(spec, 3), &c->base) < 0)
        return -1;
    c->large = PyObject_IsTrue(PyTuple_GET_ITEM(spec, 4));
    if (c->large < 0)
        return -1;
    if (c->base < 0) {
        PyErr_Format(PyExc_ValueError, "the %s column's offset is negative", what);
        return -1;
    }
    if (PyObject_GetBuffer(offsets, &c->offsets, PyBUF_SIMPLE) < 0)
        return -1;
    if (PyObject_GetBuffer(data, &c->data, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&c->offsets);
        return -1;
    }
    c->present = 1;
    if (validity != Py_None) {
        if (PyObject_GetBuffer(validity, &c->validity, PyBUF_SIMPLE) < 0) {
            PyBuffer_Release(&c->offsets);
            PyBuffer_Release(&c->data);
            c->present = 0;
            return -1;
        }
        c->has_validity = 1;
    }
    width = c->large ? 8 : 4;
    need = (c->base + rows + 1) * width;
    if (c->offsets.len < need || (c->has_validity && c->validity.len < (c->base + rows + 7) / 8)) {
        PyErr_Format(PyExc_ValueError, "the %s column's buffers are shorter than its %zd rows", what, rows);
        arrow_binary_release(c);
        return -1;
    }
    return 0;
}

/* Row i of a column as a Blob (n = -1: null); -1 with ValueError for offsets out of range. */
static int
arrow_binary_row(const ArrowBinary *c, Py_ssize_t i, Blob *b, const char *what)
{
    int64_t start, end;
    Py_ssize_t j = c->base + i;
    b->held = 0;
    if (!c->present ||
        (c->has_validity && !(((const unsigned char *)c->validity.buf)[j >> 3] & (1u << (j & 7))))) {
        b->data = NULL;
        b->n = -1;
        return 0;
    }
    if (c->large) {
        const int64_t *o = (const int64_t *)c->offsets.buf;
        start = o[j];
        end = o[j + 1];
    }
    else {
        const int32_t *o = (const int32_t *)c->offsets.buf;
        start = o[j];
        end = o[j + 1];
    }
    if (start < 0 || end < start || end > (int64_t)c->data.len) {
        PyErr_Format(PyExc_ValueError, "the %s column's row %zd has offsets %lld..%lld outside its %zd bytes",
                     what, i, (long long)start, (long long)end, c->data.len);
        return -1;
    }
    b->data = (const char *)c->data.buf + start;
    b->n = (Py_ssize_t)(end - start);
    return 0;
}

/* append_column(timestamp_ms, rows, values, keys, start) -> the first row not appended.
 * Rows start..rows-1 of two Arrow binary columns (see ArrowBinary; keys None: no keys) as
 * records without headers, all with timestamp_ms, until the batch is full (the first record
 * always fits, as in append()) or sealed; records.builder.PyRecords.append_column is the
 * reference. */
PyObject *
records_append_column(RecordsBuffer *self, PyObject *const *args, Py_ssize_t nargs)
{
    long long ts;
    Py_ssize_t rows, start, i, appended;
    ArrowBinary values, keys;
    Blob key, value;

    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "append_column(timestamp_ms, rows, values, keys, start)");
        return NULL;
    }
    ts = PyLong_AsLongLong(args[0]);
    if (ts == -1 && PyErr_Occurred())
        return NULL;
    if (ssize_arg(args[1], &rows) < 0 || ssize_arg(args[4], &start) < 0)
        return NULL;
    if (rows < 0 || start < 0 || start > rows) {
        PyErr_Format(PyExc_ValueError, "start %zd must be within 0..rows (%zd)", start, rows);
        return NULL;
    }
    if (self->sealed || start == rows)
        return PyLong_FromSsize_t(start);
    if (arrow_binary_get(args[2], &values, rows, "value") < 0)
        return NULL;
    if (arrow_binary_get(args[3], &keys, rows, "key") < 0) {
        arrow_binary_release(&values);
        return NULL;
    }
    for (i = start; i < rows; i++) {
        if (arrow_binary_row(&keys, i, &key, "key") < 0 || arrow_binary_row(&values, i, &value, "value") < 0)
            goto fail;
        appended = records_append_blobs(self, ts, &key, &value);
        if (appended == RECORDS_FULL)
            break;
        if (appended < 0)
            goto fail;
    }
    arrow_binary_release(&values);
    arrow_binary_release(&keys);
    return PyLong_FromSsize_t(i);
fail:
    arrow_binary_release(&values);
    arrow_binary_release(&keys);
    return NULL;
}

/* key_partitions(keys, rows, num_partitions) -> int32 buffer (bytes): per row of an Arrow
 * binary key column (append_column's form), the Java client's partition for the key,
 * toPositive(murmur2(key)) % num_partitions, or -1 where the key is null. */
PyObject *
key_partitions(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    ArrowBinary keys;
    Py_ssize_t rows, n, i;
    PyObject *out;
    int32_t *parts;
    Blob key;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "key_partitions(keys, rows, num_partitions)");
        return NULL;
    }
    if (ssize_arg(args[1], &rows) < 0 || ssize_arg(args[2], &n) < 0)
        return NULL;
    if (rows < 0 || n < 1 || n > INT32_MAX) {
        PyErr_Format(PyExc_ValueError, "rows (%zd) must be >= 0 and num_partitions (%zd) >= 1", rows, n);
        return NULL;
    }
    if (arrow_binary_get(args[0], &keys, rows, "key") < 0)
        return NULL;
    out = PyBytes_FromStringAndSize(NULL, rows * 4);
    if (out == NULL)
        goto done;
    parts = (int32_t *)PyBytes_AS_STRING(out);
    for (i = 0; i < rows; i++) {
        if (arrow_binary_row(&keys, i, &key, "key") < 0) {
            Py_CLEAR(out);
            goto done;
        }
        parts[i] = key.n < 0 ? -1 : (int32_t)key_partition(key.data, key.n, n);
    }
done:
    arrow_binary_release(&keys);
    return out;
}
