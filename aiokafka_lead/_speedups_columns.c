/*
 * aiokafka_lead._speedups, columns: decoded records -> Arrow column buffers in one pass over
 * the records, for readers that hand columns on (the Spark source builds
 * pyarrow.RecordBatch objects from them).
 *
 *   record_columns(chunks, end_offset, headers)
 *       chunks: a list of (records, timestamp_type, leader_epoch) as the consumer's
 *       getmany_batches() gives them, records being Record tuples (offset, timestamp, key,
 *       value, headers). Records at or after end_offset are left out. Returns
 *       (count, offset, timestamp_us, timestamp_type, key, value, header_columns) where
 *       offset and timestamp_us are int64 buffers (timestamps in microseconds),
 *       timestamp_type an int32 buffer, key and value each a (validity or None, int32
 *       offsets, data) triple of an Arrow binary column, and header_columns None unless
 *       headers is true, else (list offsets, header key offsets, header key data, header
 *       value validity or None, header value offsets, header value data).
 *
 * Buffers are bytes objects in the machine's byte order (little-endian on every platform
 * Arrow supports). A column larger than Arrow's 32-bit offsets allow raises OverflowError,
 * so the caller cuts smaller batches. Anything that is not what the consumer hands out
 * raises TypeError; nothing is returned unless every record was read.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* One binary column being filled: validity bitmap (NULL until the first null), offsets, data. */
typedef struct {
    char *validity;
    int32_t *offsets;
    char *data;
    PyObject *validity_obj, *offsets_obj, *data_obj;
    int64_t data_size;
} BinaryColumn;

static int
column_alloc(BinaryColumn *c, Py_ssize_t rows, int64_t data_size, int nullable)
{
    memset(c, 0, sizeof(*c));
    if (data_size > INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "record_columns: a column exceeds 2 GiB; read fewer records at once");
        return -1;
    }
    c->offsets_obj = PyBytes_FromStringAndSize(NULL, (rows + 1) * (Py_ssize_t)sizeof(int32_t));
    c->data_obj = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)data_size);
    if (c->offsets_obj == NULL || c->data_obj == NULL)
        return -1;
    c->offsets = (int32_t *)PyBytes_AS_STRING(c->offsets_obj);
    c->data = PyBytes_AS_STRING(c->data_obj);
    c->offsets[0] = 0;
    if (nullable) {
        Py_ssize_t n = (rows + 7) / 8;
        c->validity_obj = PyBytes_FromStringAndSize(NULL, n > 0 ? n : 1);
        if (c->validity_obj == NULL)
            return -1;
        c->validity = PyBytes_AS_STRING(c->validity_obj);
        memset(c->validity, 0xff, (size_t)(n > 0 ? n : 1));
    }
    return 0;
}

static void
column_clear(BinaryColumn *c)
{
    Py_CLEAR(c->validity_obj);
    Py_CLEAR(c->offsets_obj);
    Py_CLEAR(c->data_obj);
}

/* Row i of the column: the bytes of item (bytes or None), appended after row i - 1. */
static int
column_put(BinaryColumn *c, Py_ssize_t i, PyObject *item, int *saw_null)
{
    int32_t at = c->offsets[i];
    if (item == Py_None) {
        c->validity[i / 8] &= (char)~(1 << (i % 8));
        *saw_null = 1;
        c->offsets[i + 1] = at;
        return 0;
    }
    const char *buf;
    Py_ssize_t len;
    if (PyBytes_Check(item)) {
        buf = PyBytes_AS_STRING(item);
        len = PyBytes_GET_SIZE(item);
    }
    else if (PyUnicode_Check(item)) {
        buf = PyUnicode_AsUTF8AndSize(item, &len);
        if (buf == NULL)
            return -1;
    }
    else {
        PyErr_Format(PyExc_TypeError, "record_columns: expected bytes, str or None, not %.100s",
                     Py_TYPE(item)->tp_name);
        return -1;
    }
    memcpy(c->data + at, buf, (size_t)len);
    c->offsets[i + 1] = at + (int32_t)len;
    return 0;
}

static PyObject *
column_triple(BinaryColumn *c, int saw_null)
{
    return PyTuple_Pack(3, saw_null ? c->validity_obj : Py_None, c->offsets_obj, c->data_obj);
}

static Py_ssize_t
bytes_size(PyObject *item)
{
    if (item == Py_None)
        return 0;
    if (PyBytes_Check(item))
        return PyBytes_GET_SIZE(item);
    if (PyUnicode_Check(item)) {
        Py_ssize_t len;
        if (PyUnicode_AsUTF8AndSize(item, &len) == NULL)
            return -1;
        return len;
    }
    PyErr_Format(PyExc_TypeError, "record_columns: expected bytes, str or None, not %.100s",
                 Py_TYPE(item)->tp_name);
    return -1;
}

/* The Record tuple at records[i], checked. */
static PyObject *
record_at(PyObject *records, Py_ssize_t i)
{
    PyObject *record = PyList_GET_ITEM(records, i);
    if (!PyTuple_Check(record) || PyTuple_GET_SIZE(record) != 5) {
        PyErr_SetString(PyExc_TypeError, "record_columns: records must be Record tuples");
        return NULL;
    }
    return record;
}

/* Sizes of the records kept: rows, key/value bytes, headers and their key/value bytes. */
typedef struct {
    Py_ssize_t rows, headers;
    int64_t key_bytes, value_bytes, header_key_bytes, header_value_bytes;
} Sizes;

static int
chunk_parts(PyObject *chunk, PyObject **records, long *ts_type)
{
    if (!PyTuple_Check(chunk) || PyTuple_GET_SIZE(chunk) != 3 || !PyList_Check(PyTuple_GET_ITEM(chunk, 0))) {
        PyErr_SetString(PyExc_TypeError, "record_columns: chunks must be (records, timestamp_type, leader_epoch)");
        return -1;
    }
    *records = PyTuple_GET_ITEM(chunk, 0);
    *ts_type = PyLong_AsLong(PyTuple_GET_ITEM(chunk, 1));
    return (*ts_type == -1 && PyErr_Occurred()) ? -1 : 0;
}

/* How many records of `records` lie before end_offset (offsets increase within a chunk). */
static int
kept_in(PyObject *records, long long end_offset, Py_ssize_t *kept)
{
    Py_ssize_t n = PyList_GET_SIZE(records), i;
    for (i = 0; i < n; i++) {
        PyObject *record = record_at(records, i);
        if (record == NULL)
            return -1;
        long long offset = PyLong_AsLongLong(PyTuple_GET_ITEM(record, 0));
        if (offset == -1 && PyErr_Occurred())
            return -1;
        if (offset >= end_offset)
            break;
    }
    *kept = i;
    return 0;
}

/* Chunk c of `chunks`: its records, their timestamp type and how many lie before end_offset. */
static int
chunk_kept(PyObject *chunks, Py_ssize_t c, long long end_offset, PyObject **records, long *ts_type,
           Py_ssize_t *kept)
{
    if (chunk_parts(PyList_GET_ITEM(chunks, c), records, ts_type) < 0)
        return -1;
    return kept_in(*records, end_offset, kept);
}

static int
measure(PyObject *chunks, long long end_offset, int with_headers, Sizes *s)
{
    Py_ssize_t c, i, h;
    memset(s, 0, sizeof(*s));
    for (c = 0; c < PyList_GET_SIZE(chunks); c++) {
        PyObject *records;
        long ts_type;
        Py_ssize_t kept;
        if (chunk_kept(chunks, c, end_offset, &records, &ts_type, &kept) < 0)
            return -1;
        for (i = 0; i < kept; i++) {
            PyObject *record = PyList_GET_ITEM(records, i);
            Py_ssize_t k = bytes_size(PyTuple_GET_ITEM(record, 2));
            Py_ssize_t v = bytes_size(PyTuple_GET_ITEM(record, 3));
            if (k < 0 || v < 0)
                return -1;
            s->key_bytes += k;
            s->value_bytes += v;
            if (with_headers) {
                PyObject *headers = PyTuple_GET_ITEM(record, 4);
                if (!PyTuple_Check(headers)) {
                    PyErr_SetString(PyExc_TypeError, "record_columns: headers must be a tuple");
                    return -1;
                }
                for (h = 0; h < PyTuple_GET_SIZE(headers); h++) {
                    PyObject *pair = PyTuple_GET_ITEM(headers, h);
                    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
                        PyErr_SetString(PyExc_TypeError, "record_columns: a header must be a (key, value) tuple");
                        return -1;
                    }
                    Py_ssize_t hk = bytes_size(PyTuple_GET_ITEM(pair, 0));
                    Py_ssize_t hv = bytes_size(PyTuple_GET_ITEM(pair, 1));
                    if (hk < 0 || hv < 0)
                        return -1;
                    s->header_key_bytes += hk;
                    s->header_value_bytes += hv;
                }
                s->headers += PyTuple_GET_SIZE(headers);
            }
        }
        s->rows += kept;
    }
    if (s->headers > INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "record_columns: too many headers; read fewer records at once");
        return -1;
    }
    return 0;
}

static PyObject *
record_columns(PyObject *self, PyObject *args)
{
    PyObject *chunks, *result = NULL, *header_columns = NULL;
    long long end_offset;
    int with_headers;
    Sizes s;
    BinaryColumn key, value, hkey, hvalue;
    PyObject *offset_obj = NULL, *ts_obj = NULL, *type_obj = NULL, *list_obj = NULL, *list_valid = NULL;
    int key_null = 0, value_null = 0, hkey_null = 0, hvalue_null = 0, list_null = 0;
    Py_ssize_t row = 0, header = 0, c, i, h;

    memset(&key, 0, sizeof(key));
    memset(&value, 0, sizeof(value));
    memset(&hkey, 0, sizeof(hkey));
    memset(&hvalue, 0, sizeof(hvalue));
    if (!PyArg_ParseTuple(args, "O!Lp:record_columns", &PyList_Type, &chunks, &end_offset, &with_headers))
        return NULL;
    if (measure(chunks, end_offset, with_headers, &s) < 0)
        return NULL;
    if (column_alloc(&key, s.rows, s.key_bytes, 1) < 0 || column_alloc(&value, s.rows, s.value_bytes, 1) < 0)
        goto done;
    offset_obj = PyBytes_FromStringAndSize(NULL, s.rows * (Py_ssize_t)sizeof(int64_t));
    ts_obj = PyBytes_FromStringAndSize(NULL, s.rows * (Py_ssize_t)sizeof(int64_t));
    type_obj = PyBytes_FromStringAndSize(NULL, s.rows * (Py_ssize_t)sizeof(int32_t));
    if (offset_obj == NULL || ts_obj == NULL || type_obj == NULL)
        goto done;
    if (with_headers) {
        list_obj = PyBytes_FromStringAndSize(NULL, (s.rows + 1) * (Py_ssize_t)sizeof(int32_t));
        list_valid = PyBytes_FromStringAndSize(NULL, s.rows / 8 + 1);
        if (list_obj == NULL || list_valid == NULL || column_alloc(&hkey, s.headers, s.header_key_bytes, 0) < 0 ||
            column_alloc(&hvalue, s.headers, s.header_value_bytes, 1) < 0)
            goto done;
        ((int32_t *)PyBytes_AS_STRING(list_obj))[0] = 0;
        memset(PyBytes_AS_STRING(list_valid), 0xff, (size_t)(s.rows / 8 + 1));
    }
    int64_t *offsets = (int64_t *)PyBytes_AS_STRING(offset_obj);
    int64_t *timestamps = (int64_t *)PyBytes_AS_STRING(ts_obj);
    int32_t *types = (int32_t *)PyBytes_AS_STRING(type_obj);
    for (c = 0; c < PyList_GET_SIZE(chunks); c++) {
        PyObject *records;
        long ts_type;
        Py_ssize_t kept;
        if (chunk_kept(chunks, c, end_offset, &records, &ts_type, &kept) < 0)
            goto done;
        for (i = 0; i < kept; i++, row++) {
            PyObject *record = PyList_GET_ITEM(records, i);
            long long ts = PyLong_AsLongLong(PyTuple_GET_ITEM(record, 1));
            if (ts == -1 && PyErr_Occurred())
                goto done;
            offsets[row] = PyLong_AsLongLong(PyTuple_GET_ITEM(record, 0));
            timestamps[row] = (int64_t)ts * 1000;
            types[row] = (int32_t)ts_type;
            if (column_put(&key, row, PyTuple_GET_ITEM(record, 2), &key_null) < 0 ||
                column_put(&value, row, PyTuple_GET_ITEM(record, 3), &value_null) < 0)
                goto done;
            if (with_headers) {
                PyObject *headers = PyTuple_GET_ITEM(record, 4);
                for (h = 0; h < PyTuple_GET_SIZE(headers); h++, header++) {
                    PyObject *pair = PyTuple_GET_ITEM(headers, h);
                    if (column_put(&hkey, header, PyTuple_GET_ITEM(pair, 0), &hkey_null) < 0 ||
                        column_put(&hvalue, header, PyTuple_GET_ITEM(pair, 1), &hvalue_null) < 0)
                        goto done;
                }
                ((int32_t *)PyBytes_AS_STRING(list_obj))[row + 1] = (int32_t)header;
                if (PyTuple_GET_SIZE(headers) == 0) {
                    PyBytes_AS_STRING(list_valid)[row / 8] &= (char)~(1 << (row % 8));
                    list_null = 1;
                }
            }
        }
    }
    if (hkey_null) {
        PyErr_SetString(PyExc_TypeError, "record_columns: a header key is None");
        goto done;
    }
    if (with_headers) {
        header_columns = Py_BuildValue("(OOOOOOO)", list_null ? list_valid : Py_None, list_obj,
                                       hkey.offsets_obj, hkey.data_obj,
                                       hvalue_null ? hvalue.validity_obj : Py_None, hvalue.offsets_obj,
                                       hvalue.data_obj);
        if (header_columns == NULL)
            goto done;
    }
    else {
        header_columns = Py_None;
        Py_INCREF(header_columns);
    }
    {
        PyObject *k = column_triple(&key, key_null), *v = column_triple(&value, value_null);
        if (k != NULL && v != NULL)
            result = Py_BuildValue("(nOOONNO)", s.rows, offset_obj, ts_obj, type_obj, k, v, header_columns);
        else {
            Py_XDECREF(k);
            Py_XDECREF(v);
        }
    }
done:
    Py_XDECREF(header_columns);
    Py_XDECREF(offset_obj);
    Py_XDECREF(ts_obj);
    Py_XDECREF(type_obj);
    Py_XDECREF(list_obj);
    Py_XDECREF(list_valid);
    column_clear(&key);
    column_clear(&value);
    column_clear(&hkey);
    column_clear(&hvalue);
    return result;
}

static PyMethodDef column_methods[] = {
    {"record_columns", record_columns, METH_VARARGS,
     "record_columns(chunks, end_offset, headers) -> (count, offset, timestamp_us, timestamp_type, "
     "key, value, header_columns): Arrow column buffers of decoded records"},
    {NULL, NULL, 0, NULL},
};

/* Called by the module's init (_speedups.c). */
int
speedups_add_columns(PyObject *module)
{
    return PyModule_AddFunctions(module, column_methods);
}
