/*
 * aiokafka_lead._speedups: a Produce request and its answer on the wire, in the common case,
 * each in one C call (protocol/produce_wire.py decides when they apply and falls back to the
 * generated codecs, which stay the reference: the tests compare the two).
 *
 *   encode_produce(version, correlation_id, client_id, transactional_id, acks, timeout_ms,
 *                  topics[, split_over]) -> bytes or a list
 *       The whole frame (size prefix, request header v2, body) of a Produce request v9..v12,
 *       byte for byte what framing.encode_request writes. With split_over > 0, records that
 *       are bytes or a memoryview of at least split_over bytes are not copied: the frame is
 *       then a list, its pieces in order, those records among them as they were given (the
 *       others bytes), to be written one after the other. topics: a list of
 *       (name, [(partition, records), ...]); records bytes-like, None, or a 2-tuple of
 *       bytes-likes written one after the other (a batch's header and its records, so
 *       the batch is not joined into one buffer first).
 *
 *   decode_produce_written(frame, version) -> (throttle_time_ms, rows) or None
 *       A Produce response v9..v12 (the frame after its size prefix: header v1, body) whose
 *       every partition was written and has nothing more to say: error code 0, no record
 *       errors, no error message and no tagged field anywhere. rows: a list of
 *       (topic, partition, base_offset, log_append_time_ms, log_start_offset) in the
 *       answer's order. Anything else, a malformed frame included, gives None: the generated
 *       decoder then decodes it, and raises what it raises.
 */
#include "_speedups_producer.h"

#define PRODUCE_API_KEY 0
#define FIRST_VERSION 9
#define LAST_VERSION 12

static Py_ssize_t
uvarint_size(uint64_t v)
{
    Py_ssize_t n = 1;
    while (v > 0x7F) {
        v >>= 7;
        n++;
    }
    return n;
}

static unsigned char *
put_uvarint(unsigned char *out, uint64_t v)
{
    while (v > 0x7F) {
        *out++ = (unsigned char)((v & 0x7F) | 0x80);
        v >>= 7;
    }
    *out++ = (unsigned char)v;
    return out;
}

static unsigned char *
put_be(unsigned char *out, uint64_t v, int bytes)
{
    for (int i = bytes - 1; i >= 0; i--)
        *out++ = (unsigned char)(v >> (8 * i));
    return out;
}

/* A str argument as UTF-8 (NULL data for None); -1 with an error set. */
static int
utf8_arg(PyObject *s, const char **data, Py_ssize_t *n, const char *what)
{
    if (s == Py_None) {
        *data = NULL;
        *n = -1;
        return 0;
    }
    if (!PyUnicode_Check(s)) {
        PyErr_Format(PyExc_TypeError, "encode_produce: %s must be str or None", what);
        return -1;
    }
    *data = PyUnicode_AsUTF8AndSize(s, n);
    return *data == NULL ? -1 : 0;
}

/* One partition's data: its records' buffers (a head written first, if given) held while
 * the frame is written. */
typedef struct {
    long index;
    PyObject *records_obj; /* borrowed: the records as given (a split piece of the frame) */
    Py_ssize_t split;      /* written as its own piece, not copied (then: its offset plus one) */
    Py_buffer head;
    Py_buffer records;
    int has_head;
    int has_records;
} PartitionData;

static void
release_parts(PartitionData *parts, Py_ssize_t count)
{
    for (Py_ssize_t i = 0; i < count; i++) {
        if (parts[i].has_head)
            PyBuffer_Release(&parts[i].head);
        if (parts[i].has_records)
            PyBuffer_Release(&parts[i].records);
    }
}

/* The records' length in the frame (head and records). */
static Py_ssize_t
records_len(const PartitionData *part)
{
    return (part->has_head ? part->head.len : 0) + part->records.len;
}

/* The frame as pieces: the scratch (the frame without the split records) cut where each
 * split record goes (its `split` is that offset plus one), the records themselves between. */
static PyObject *
split_pieces(const unsigned char *scratch, Py_ssize_t kept, const PartitionData *parts, Py_ssize_t nparts,
             Py_ssize_t nsplit)
{
    PyObject *pieces = PyList_New(2 * nsplit + 1), *piece;
    Py_ssize_t at = 0, n = 0;
    if (pieces == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < nparts; i++) {
        if (!parts[i].split)
            continue;
        Py_ssize_t cut = parts[i].split - 1;
        if ((piece = PyBytes_FromStringAndSize((const char *)scratch + at, cut - at)) == NULL) {
            Py_DECREF(pieces);
            return NULL;
        }
        PyList_SET_ITEM(pieces, n++, piece);
        PyList_SET_ITEM(pieces, n++, Py_NewRef(parts[i].records_obj));
        at = cut;
    }
    if ((piece = PyBytes_FromStringAndSize((const char *)scratch + at, kept - at)) == NULL) {
        Py_DECREF(pieces);
        return NULL;
    }
    PyList_SET_ITEM(pieces, n, piece);
    return pieces;
}

static PyObject *
encode_produce(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    long version, correlation_id, acks, timeout_ms;
    const char *client_id, *txn_id;
    Py_ssize_t client_len, txn_len, size, nparts = 0, filled = 0, split_over = 0, nsplit = 0, kept;
    PyObject *topics, *result = NULL;
    PartitionData *parts = NULL;
    unsigned char *scratch = NULL;

    if (nargs != 7 && nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "encode_produce takes 7 or 8 arguments");
        return NULL;
    }
    if (nargs == 8 && (split_over = PyLong_AsSsize_t(args[7])) == -1 && PyErr_Occurred())
        return NULL;
    version = PyLong_AsLong(args[0]);
    correlation_id = PyLong_AsLong(args[1]);
    acks = PyLong_AsLong(args[4]);
    timeout_ms = PyLong_AsLong(args[5]);
    if (PyErr_Occurred())
        return NULL;
    if (version < FIRST_VERSION || version > LAST_VERSION) {
        PyErr_Format(PyExc_ValueError, "encode_produce: version %ld outside %d..%d", version,
                     FIRST_VERSION, LAST_VERSION);
        return NULL;
    }
    if (utf8_arg(args[2], &client_id, &client_len, "client_id") < 0 ||
        utf8_arg(args[3], &txn_id, &txn_len, "transactional_id") < 0)
        return NULL;
    if (client_len > 0x7FFF) {
        PyErr_SetString(PyExc_ValueError, "encode_produce: client_id longer than 32767 bytes");
        return NULL;
    }
    topics = args[6];
    if (!PyList_Check(topics)) {
        PyErr_SetString(PyExc_TypeError, "encode_produce: topics must be a list");
        return NULL;
    }
    Py_ssize_t ntopics = PyList_GET_SIZE(topics);
    for (Py_ssize_t t = 0; t < ntopics; t++) {
        PyObject *topic = PyList_GET_ITEM(topics, t);
        if (!PyTuple_Check(topic) || PyTuple_GET_SIZE(topic) != 2 ||
            !PyUnicode_Check(PyTuple_GET_ITEM(topic, 0)) || !PyList_Check(PyTuple_GET_ITEM(topic, 1))) {
            PyErr_SetString(PyExc_TypeError, "encode_produce: each topic must be (str, list)");
            return NULL;
        }
        nparts += PyList_GET_SIZE(PyTuple_GET_ITEM(topic, 1));
    }
    parts = PyMem_Calloc((size_t)(nparts ? nparts : 1), sizeof(PartitionData));
    if (parts == NULL)
        return PyErr_NoMemory();

    /* sizes first: header, body, every topic and partition */
    size = 4 + 2 + 2 + 4 + 2 + (client_len > 0 ? client_len : 0) + 1;
    size += uvarint_size((uint64_t)(txn_len + 1)) + (txn_len > 0 ? txn_len : 0) + 2 + 4;
    size += uvarint_size((uint64_t)ntopics + 1) + 1;
    for (Py_ssize_t t = 0; t < ntopics; t++) {
        PyObject *topic = PyList_GET_ITEM(topics, t);
        PyObject *list = PyTuple_GET_ITEM(topic, 1);
        Py_ssize_t name_len;
        if (PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(topic, 0), &name_len) == NULL)
            goto done;
        size += uvarint_size((uint64_t)name_len + 1) + name_len;
        size += uvarint_size((uint64_t)PyList_GET_SIZE(list) + 1) + 1;
        for (Py_ssize_t p = 0; p < PyList_GET_SIZE(list); p++) {
            PyObject *item = PyList_GET_ITEM(list, p);
            PartitionData *part = &parts[filled];
            if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2) {
                PyErr_SetString(PyExc_TypeError, "encode_produce: each partition must be (int, records)");
                goto done;
            }
            part->index = PyLong_AsLong(PyTuple_GET_ITEM(item, 0));
            if (part->index == -1 && PyErr_Occurred())
                goto done;
            if (part->index < INT32_MIN || part->index > INT32_MAX) {
                PyErr_SetString(PyExc_OverflowError, "encode_produce: partition outside int32");
                goto done;
            }
            PyObject *records = PyTuple_GET_ITEM(item, 1);
            size += 4 + 1;
            if (records == Py_None) {
                size += 1;
            } else {
                if (PyTuple_Check(records)) {
                    if (PyTuple_GET_SIZE(records) != 2) {
                        PyErr_SetString(PyExc_TypeError, "encode_produce: records parts must be (head, records)");
                        goto done;
                    }
                    if (PyObject_GetBuffer(PyTuple_GET_ITEM(records, 0), &part->head, PyBUF_SIMPLE) < 0)
                        goto done;
                    part->has_head = 1;
                    records = PyTuple_GET_ITEM(records, 1);
                }
                if (PyObject_GetBuffer(records, &part->records, PyBUF_SIMPLE) < 0)
                    goto done;
                part->has_records = 1;
                part->records_obj = records;
                size += uvarint_size((uint64_t)records_len(part) + 1) + records_len(part);
                if (split_over > 0 && part->records.len >= split_over &&
                    (PyBytes_CheckExact(records) || PyMemoryView_Check(records))) {
                    part->split = 1;
                    nsplit++;
                }
            }
            filled++;
        }
    }
    if (size - 4 > INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "encode_produce: request larger than 2 GiB");
        goto done;
    }

    kept = size;
    for (Py_ssize_t i = 0; i < nparts; i++)
        if (parts[i].split)
            kept -= parts[i].records.len;
    /* the frame without its split records: the result itself, or a scratch cut into pieces */
    if (nsplit == 0) {
        if ((result = PyBytes_FromStringAndSize(NULL, size)) == NULL)
            goto done;
        scratch = (unsigned char *)PyBytes_AS_STRING(result);
    } else if ((scratch = PyMem_Malloc((size_t)(kept ? kept : 1))) == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    unsigned char *out = scratch;
    out = put_be(out, (uint64_t)(size - 4), 4);
    out = put_be(out, PRODUCE_API_KEY, 2);
    out = put_be(out, (uint64_t)version, 2);
    out = put_be(out, (uint64_t)(uint32_t)correlation_id, 4);
    out = put_be(out, (uint64_t)(uint16_t)(client_len < 0 ? -1 : client_len), 2);
    if (client_len > 0) {
        memcpy(out, client_id, (size_t)client_len);
        out += client_len;
    }
    *out++ = 0; /* header tagged fields */
    out = put_uvarint(out, (uint64_t)(txn_len + 1));
    if (txn_len > 0) {
        memcpy(out, txn_id, (size_t)txn_len);
        out += txn_len;
    }
    out = put_be(out, (uint64_t)(uint16_t)acks, 2);
    out = put_be(out, (uint64_t)(uint32_t)timeout_ms, 4);
    out = put_uvarint(out, (uint64_t)ntopics + 1);
    Py_ssize_t k = 0;
    for (Py_ssize_t t = 0; t < ntopics; t++) {
        PyObject *topic = PyList_GET_ITEM(topics, t);
        PyObject *list = PyTuple_GET_ITEM(topic, 1);
        Py_ssize_t name_len;
        const char *name = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(topic, 0), &name_len);
        out = put_uvarint(out, (uint64_t)name_len + 1);
        memcpy(out, name, (size_t)name_len);
        out += name_len;
        out = put_uvarint(out, (uint64_t)PyList_GET_SIZE(list) + 1);
        for (Py_ssize_t p = 0; p < PyList_GET_SIZE(list); p++, k++) {
            PartitionData *part = &parts[k];
            out = put_be(out, (uint64_t)(uint32_t)part->index, 4);
            if (!part->has_records) {
                *out++ = 0;
            } else {
                out = put_uvarint(out, (uint64_t)records_len(part) + 1);
                if (part->has_head) {
                    memcpy(out, part->head.buf, (size_t)part->head.len);
                    out += part->head.len;
                }
                if (part->split) {
                    part->split = (out - scratch) + 1; /* where it goes, plus one */
                } else {
                    memcpy(out, part->records.buf, (size_t)part->records.len);
                    out += part->records.len;
                }
            }
            *out++ = 0; /* partition tagged fields */
        }
        *out++ = 0; /* topic tagged fields */
    }
    *out++ = 0; /* body tagged fields */
    assert(out == scratch + kept);
    if (nsplit > 0)
        result = split_pieces(scratch, kept, parts, nparts, nsplit);
done:
    release_parts(parts, nparts); /* zeroed entries past `filled` hold nothing */
    PyMem_Free(parts);
    if (nsplit > 0)
        PyMem_Free(scratch);
    return result;
}

/* A reader over a response frame: every read checks the bytes left; `bad` once one failed. */
typedef struct {
    const unsigned char *p;
    const unsigned char *end;
    int bad;
} Reader;

static uint64_t
read_be(Reader *r, int bytes)
{
    uint64_t v = 0;
    if (r->end - r->p < bytes) {
        r->bad = 1;
        return 0;
    }
    for (int i = 0; i < bytes; i++)
        v = (v << 8) | *r->p++;
    return v;
}

static uint64_t
read_uvarint(Reader *r)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 35; shift += 7) {
        if (r->p >= r->end) {
            r->bad = 1;
            return 0;
        }
        unsigned char b = *r->p++;
        v |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80))
            return v;
    }
    r->bad = 1; /* longer than an unsigned varint of 32 bits */
    return 0;
}

/* A byte that must be 0 (an empty tagged-field section, an empty or null compact field). */
static int
expect_zero(Reader *r)
{
    return read_uvarint(r) == 0 && !r->bad;
}

static PyObject *
decode_produce_written(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer view;
    PyObject *rows = NULL, *name = NULL, *result = NULL;
    long version;

    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "decode_produce_written takes 2 arguments");
        return NULL;
    }
    version = PyLong_AsLong(args[1]);
    if (version == -1 && PyErr_Occurred())
        return NULL;
    if (version < FIRST_VERSION || version > LAST_VERSION)
        Py_RETURN_NONE;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    Reader r = {(const unsigned char *)view.buf, (const unsigned char *)view.buf + view.len, 0};
    rows = PyList_New(0);
    if (rows == NULL)
        goto done;
    read_be(&r, 4); /* correlation id */
    if (!expect_zero(&r)) /* header tagged fields */
        goto not_common;
    uint64_t ntopics = read_uvarint(&r);
    if (r.bad || ntopics == 0) /* 0: null, which the array may not be */
        goto not_common;
    for (uint64_t t = 1; t < ntopics; t++) {
        uint64_t name_len = read_uvarint(&r);
        if (r.bad || name_len == 0 || (uint64_t)(r.end - r.p) < name_len - 1)
            goto not_common;
        name = PyUnicode_DecodeUTF8((const char *)r.p, (Py_ssize_t)(name_len - 1), "strict");
        if (name == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
                goto done;
            PyErr_Clear();
            goto not_common;
        }
        r.p += name_len - 1;
        uint64_t nparts = read_uvarint(&r);
        if (r.bad || nparts == 0)
            goto not_common;
        for (uint64_t p = 1; p < nparts; p++) {
            int32_t index = (int32_t)read_be(&r, 4);
            int16_t error_code = (int16_t)read_be(&r, 2);
            int64_t base_offset = (int64_t)read_be(&r, 8);
            int64_t append_time = (int64_t)read_be(&r, 8);
            int64_t start_offset = (int64_t)read_be(&r, 8);
            if (r.bad || error_code != 0)
                goto not_common;
            /* record errors: an empty array (1); error message: null (0); no tagged fields */
            if (read_uvarint(&r) != 1 || r.bad || !expect_zero(&r) || !expect_zero(&r))
                goto not_common;
            PyObject *row = Py_BuildValue("(OiLLL)", name, index, (long long)base_offset,
                                          (long long)append_time, (long long)start_offset);
            if (row == NULL)
                goto done;
            int failed = PyList_Append(rows, row);
            Py_DECREF(row);
            if (failed < 0)
                goto done;
        }
        Py_CLEAR(name);
        if (!expect_zero(&r)) /* topic tagged fields */
            goto not_common;
    }
    int32_t throttle = (int32_t)read_be(&r, 4);
    if (!expect_zero(&r) || r.p != r.end) /* body tagged fields, then nothing */
        goto not_common;
    result = Py_BuildValue("(iO)", throttle, rows);
    goto done;
not_common:
    result = Py_NewRef(Py_None);
done:
    Py_XDECREF(name);
    Py_XDECREF(rows);
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef produce_wire_functions[] = {
    {"encode_produce", (PyCFunction)(void (*)(void))encode_produce, METH_FASTCALL,
     "encode_produce(version, correlation_id, client_id, transactional_id, acks, timeout_ms, "
     "topics) -> the Produce request frame (v9..v12)"},
    {"decode_produce_written", (PyCFunction)(void (*)(void))decode_produce_written, METH_FASTCALL,
     "decode_produce_written(frame, version) -> (throttle_time_ms, rows) when every partition "
     "was written with nothing more to say, else None"},
    {NULL, NULL, 0, NULL},
};

/* Called by PyInit__speedups: the Produce wire functions, added to the module. */
int
speedups_add_produce_wire(PyObject *module)
{
    return PyModule_AddFunctions(module, produce_wire_functions);
}
