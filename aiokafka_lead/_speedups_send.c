/*
 * aiokafka_lead._speedups: SendPath, the common case of the producer's send() in one C call.
 *
 *   SendPath(views, store, accumulator, sticky, handle_type, buffer_memory,
 *            max_request_size, record_overhead, yield_mask)
 *       .append(topic, key, value[, timestamp_ms]) -> a DeliveryHandle, a 1-tuple holding one (the caller
 *       gives the event loop a turn first: every yield_mask + 1 records, and after a record
 *       that filled its partition's open batch), or None: not the common case, nothing changed, the
 *       caller takes producer.send()'s Python path.
 *
 * The common case is exactly what producer.send() and RecordAccumulator.append_now()
 * do without awaiting when: the topic's cached view is current (its store version is the
 * store's), key and value are bytes or None, the timestamp is None (now) or an int in
 * 0..2**63-1, the record is within max_request_size, the
 * partition comes from the default partitioner (murmur2 of the key, or the topic's sticky
 * partition already checked against the same pool), the buffer has room, and the
 * partition's open batch takes the record. When the open batch does not take it (none, full,
 * or not a RecordsBuffer), the accumulator's own append_now() places it, as the Python path's
 * append() would: a new batch is Python's to make. Anything else (a first send, changed metadata,
 * a serializer, a full buffer, a custom partitioner) returns None before changing anything,
 * and the Python path decides: it stays the reference, and the tests run both.
 *
 * It reads the Python objects the producer owns (the view cache, the partitioner's
 * checked sticky choices, the accumulator's queues and buffer count, each batch's builder
 * and reserved bytes) and writes only the two counters and the batch, as the Python path.
 */
#include "_speedups_producer.h"

typedef struct {
    PyObject_HEAD
    PyObject *views;        /* topic -> (store version, all partitions, available, {p: tp}) */
    PyObject *store;        /* .version */
    PyObject *accumulator;  /* ._buffer_used, ._queues */
    PyObject *queues;       /* the accumulator's {tp: deque of ProducerBatch} */
    PyObject *append_now;   /* the accumulator's append_now (a record its open batch refused) */
    PyObject *no_headers;   /* () */
    PyObject *sticky;       /* DefaultPartitioner._checked: topic -> (partition, pool) */
    PyTypeObject *handle_type;
    long long buffer_memory;
    Py_ssize_t max_request_size;
    Py_ssize_t record_overhead;
    unsigned long yield_mask;
    unsigned long appended;
} SendPath;

static PyObject *s_version, *s_buffer_used, *s_builder, *s_reserved;
static PyTypeObject *records_type;

static PyObject *
path_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *views, *store, *accumulator, *sticky, *handle_type, *queues, *append_now;
    long long buffer_memory;
    Py_ssize_t max_request_size, record_overhead;
    unsigned long yield_mask;
    SendPath *self;
    static char *names[] = {"views", "store", "accumulator", "sticky", "handle_type", "buffer_memory",
                            "max_request_size", "record_overhead", "yield_mask", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!OOO!O!Lnnk:SendPath", names, &PyDict_Type, &views,
                                     &store, &accumulator, &PyDict_Type, &sticky, &PyType_Type,
                                     &handle_type, &buffer_memory, &max_request_size, &record_overhead,
                                     &yield_mask))
        return NULL;
    if (((PyTypeObject *)handle_type)->tp_basicsize != sizeof(HandleFields)) {
        PyErr_SetString(PyExc_TypeError, "handle_type must be HandleFields or a subclass without fields");
        return NULL;
    }
    queues = PyObject_GetAttrString(accumulator, "_queues");
    if (queues == NULL)
        return NULL;
    if (!PyDict_CheckExact(queues)) {
        Py_DECREF(queues);
        PyErr_SetString(PyExc_TypeError, "accumulator._queues must be a dict");
        return NULL;
    }
    if ((append_now = PyObject_GetAttrString(accumulator, "append_now")) == NULL) {
        Py_DECREF(queues);
        return NULL;
    }
    self = (SendPath *)type->tp_alloc(type, 0);
    if (self == NULL || (self->no_headers = PyTuple_New(0)) == NULL) {
        Py_XDECREF(self);
        Py_DECREF(queues);
        Py_DECREF(append_now);
        return NULL;
    }
    self->append_now = append_now;
    Py_INCREF(views);
    self->views = views;
    Py_INCREF(store);
    self->store = store;
    Py_INCREF(accumulator);
    self->accumulator = accumulator;
    self->queues = queues;
    Py_INCREF(sticky);
    self->sticky = sticky;
    Py_INCREF(handle_type);
    self->handle_type = (PyTypeObject *)handle_type;
    self->buffer_memory = buffer_memory;
    self->max_request_size = max_request_size;
    self->record_overhead = record_overhead;
    self->yield_mask = yield_mask;
    self->appended = 0;
    return (PyObject *)self;
}

static int
path_traverse(SendPath *self, visitproc visit, void *arg)
{
    Py_VISIT(self->views);
    Py_VISIT(self->store);
    Py_VISIT(self->accumulator);
    Py_VISIT(self->queues);
    Py_VISIT(self->append_now);
    Py_VISIT(self->no_headers);
    Py_VISIT(self->sticky);
    Py_VISIT(self->handle_type);
    return 0;
}

static int
path_clear(SendPath *self)
{
    Py_CLEAR(self->views);
    Py_CLEAR(self->store);
    Py_CLEAR(self->accumulator);
    Py_CLEAR(self->queues);
    Py_CLEAR(self->append_now);
    Py_CLEAR(self->no_headers);
    Py_CLEAR(self->sticky);
    Py_CLEAR(self->handle_type);
    return 0;
}

static void
path_dealloc(SendPath *self)
{
    PyObject_GC_UnTrack(self);
    path_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* 1 if a and b are equal ints (the same object, as a cached view's version usually is). */
static int
same_version(PyObject *a, PyObject *b)
{
    return a == b ? 1 : PyObject_RichCompareBool(a, b, Py_EQ);
}

/* The record's partition as a new reference, NULL without an error when this is not the
 * common case. */
static PyObject *
choose_partition(SendPath *self, PyObject *topic, PyObject *key, PyObject *all, PyObject *available)
{
    PyObject *pool, *checked;
    Py_ssize_t n;
    if (key != Py_None) {
        if (!PyList_CheckExact(all) || (n = PyList_GET_SIZE(all)) == 0)
            return NULL;
        return PyLong_FromSsize_t(key_partition(PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key), n));
    }
    switch (PyObject_IsTrue(available)) {
    case -1:
        return NULL;
    case 1:
        pool = available;
        break;
    default:
        pool = all;
    }
    checked = PyDict_GetItemWithError(self->sticky, topic);
    if (checked == NULL || !PyTuple_CheckExact(checked) || PyTuple_GET_SIZE(checked) != 2 ||
        PyTuple_GET_ITEM(checked, 1) != pool)
        return NULL;
    Py_INCREF(PyTuple_GET_ITEM(checked, 0));
    return PyTuple_GET_ITEM(checked, 0);
}

/* Appends to the partition's open batch: a new handle, Py_None (borrowed: not the common
 * case) or NULL with an error. given_ts: the caller's timestamp (NULL: now), ts its value. */
static PyObject *
append_to_batch(SendPath *self, PyObject *tp, PyObject *key, PyObject *value, Py_ssize_t size,
                PyObject *given_ts, long long ts)
{
    PyObject *queue, *batch = NULL, *builder = NULL, *used = NULL, *now_used = NULL, *reserved = NULL;
    PyObject *record_size = NULL, *sum = NULL, *timestamp = NULL, *result = NULL;
    long long used_bytes;
    Py_ssize_t index;

    queue = PyDict_GetItemWithError(self->queues, tp);
    if (queue == NULL || PyObject_Size(queue) <= 0)
        return PyErr_Occurred() ? NULL : Py_None;
    used = PyObject_GetAttr(self->accumulator, s_buffer_used);
    if (used == NULL || ((used_bytes = PyLong_AsLongLong(used)) == -1 && PyErr_Occurred()))
        goto done;
    if (used_bytes + size > self->buffer_memory) {
        result = Py_None;
        goto done;
    }
    batch = PySequence_GetItem(queue, -1);
    if (batch == NULL || (builder = PyObject_GetAttr(batch, s_builder)) == NULL)
        goto done;
    if (!PyObject_TypeCheck(builder, records_type)) {
        result = Py_None;
        goto done;
    }
    if (given_ts == NULL && wall_ms(&ts) < 0)
        goto done;
    index = records_append_bytes((RecordsBuffer *)builder, ts, key, value);
    if (index == RECORDS_FULL) {
        result = Py_None;
        goto done;
    }
    if (index < 0)
        goto done;
    /* the record is in the batch: from here on only the accounting the Python path does */
    if ((now_used = PyLong_FromLongLong(used_bytes + size)) == NULL ||
        PyObject_SetAttr(self->accumulator, s_buffer_used, now_used) < 0 ||
        (reserved = PyObject_GetAttr(batch, s_reserved)) == NULL ||
        (record_size = PyLong_FromSsize_t(size)) == NULL || (sum = PyNumber_Add(reserved, record_size)) == NULL ||
        PyObject_SetAttr(batch, s_reserved, sum) < 0 ||
        (timestamp = given_ts != NULL ? Py_NewRef(given_ts) : PyLong_FromLongLong(ts)) == NULL)
        goto done;
    result = handle_make(self->handle_type, batch, index, timestamp);
done:
    Py_XDECREF(used);
    Py_XDECREF(now_used);
    Py_XDECREF(record_size);
    Py_XDECREF(batch);
    Py_XDECREF(builder);
    Py_XDECREF(reserved);
    Py_XDECREF(sum);
    Py_XDECREF(timestamp);
    if (result == NULL && !PyErr_Occurred())
        result = Py_None;
    return result;
}

/* A record its partition's open batch did not take: the accumulator's append_now(tp,
 * timestamp, key, value, (), size) places it. A new handle with *filled set (it filled the
 * open batch), Py_None (new reference: the buffer is full, nothing changed) or NULL with an
 * error. */
static PyObject *
append_new(SendPath *self, PyObject *tp, PyObject *key, PyObject *value, Py_ssize_t size, PyObject *given_ts,
           int *filled)
{
    PyObject *timestamp, *record_size, *placed, *handle;
    long long now;

    if (given_ts != NULL)
        timestamp = Py_NewRef(given_ts);
    else if (wall_ms(&now) < 0 || (timestamp = PyLong_FromLongLong(now)) == NULL)
        return NULL;
    if ((record_size = PyLong_FromSsize_t(size)) == NULL) {
        Py_DECREF(timestamp);
        return NULL;
    }
    {
        PyObject *call[7] = {NULL, tp, timestamp, key, value, self->no_headers, record_size};
        placed = PyObject_Vectorcall(self->append_now, call + 1, 6 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    }
    Py_DECREF(timestamp);
    Py_DECREF(record_size);
    if (placed == NULL || placed == Py_None)
        return placed;
    if (!PyTuple_CheckExact(placed) || PyTuple_GET_SIZE(placed) != 2) {
        Py_DECREF(placed);
        PyErr_SetString(PyExc_TypeError, "append_now() must return (handle, filled) or None");
        return NULL;
    }
    handle = PyTuple_GET_ITEM(placed, 0);
    if ((*filled = PyObject_IsTrue(PyTuple_GET_ITEM(placed, 1))) < 0) {
        Py_DECREF(placed);
        return NULL;
    }
    Py_INCREF(handle);
    Py_DECREF(placed);
    return handle;
}

static PyObject *
path_append(SendPath *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *topic, *key, *value, *view, *version, *partition, *tp, *handle, *wrapped, *ts = NULL;
    long long ts_value = 0;
    Py_ssize_t size;
    int current, filled = 0;

    if (nargs != 3 && nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "append(topic, key, value[, timestamp_ms])");
        return NULL;
    }
    topic = args[0];
    key = args[1];
    value = args[2];
    if (!PyUnicode_CheckExact(topic) || (key != Py_None && !PyBytes_CheckExact(key)) ||
        (value != Py_None && !PyBytes_CheckExact(value)))
        Py_RETURN_NONE;
    if (nargs == 4 && args[3] != Py_None) {
        /* an exact int in 0..2**63-1; anything else is the Python path's to refuse */
        int overflow;
        ts = args[3];
        if (!PyLong_CheckExact(ts) || (ts_value = PyLong_AsLongLongAndOverflow(ts, &overflow)) < 0 ||
            overflow)
            Py_RETURN_NONE;
    }
    size = self->record_overhead + (key != Py_None ? PyBytes_GET_SIZE(key) : 0) +
           (value != Py_None ? PyBytes_GET_SIZE(value) : 0);
    if (size > self->max_request_size)
        Py_RETURN_NONE; /* the Python path raises MessageSizeTooLargeError */
    view = PyDict_GetItemWithError(self->views, topic);
    if (view == NULL)
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    if (!PyTuple_CheckExact(view) || PyTuple_GET_SIZE(view) != 4 || !PyDict_CheckExact(PyTuple_GET_ITEM(view, 3)))
        Py_RETURN_NONE;
    if ((version = PyObject_GetAttr(self->store, s_version)) == NULL)
        return NULL;
    current = same_version(PyTuple_GET_ITEM(view, 0), version);
    Py_DECREF(version);
    if (current <= 0)
        return current < 0 ? NULL : Py_NewRef(Py_None);
    partition = choose_partition(self, topic, key, PyTuple_GET_ITEM(view, 1), PyTuple_GET_ITEM(view, 2));
    if (partition == NULL)
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    tp = PyDict_GetItemWithError(PyTuple_GET_ITEM(view, 3), partition);
    Py_DECREF(partition);
    if (tp == NULL)
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    handle = append_to_batch(self, tp, key, value, size, ts, ts_value);
    if (handle == Py_None)
        handle = append_new(self, tp, key, value, size, ts, &filled);
    if (handle == NULL || handle == Py_None)
        return handle;
    if ((++self->appended & self->yield_mask) != 0 && !filled)
        return handle;
    wrapped = PyTuple_Pack(1, handle);
    Py_DECREF(handle);
    return wrapped;
}

static PyMethodDef path_methods[] = {
    {"append", (PyCFunction)(void (*)(void))path_append, METH_FASTCALL,
     "append(topic, key, value[, timestamp_ms]) -> handle, (handle,) (yield first) or None (take "
     "the Python path)"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject SendPathType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "aiokafka_lead._speedups.SendPath",
    .tp_basicsize = sizeof(SendPath),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The common case of the producer's send() in one call (see _speedups_send.c).",
    .tp_new = path_new,
    .tp_traverse = (traverseproc)path_traverse,
    .tp_clear = (inquiry)path_clear,
    .tp_dealloc = (destructor)path_dealloc,
    .tp_methods = path_methods,
};

int
speedups_add_send(PyObject *module, PyTypeObject *records)
{
    records_type = records;
    if ((s_version = PyUnicode_InternFromString("version")) == NULL ||
        (s_buffer_used = PyUnicode_InternFromString("_buffer_used")) == NULL ||
        (s_builder = PyUnicode_InternFromString("builder")) == NULL ||
        (s_reserved = PyUnicode_InternFromString("reserved")) == NULL)
        return -1;
    return PyModule_AddType(module, &SendPathType);
}
