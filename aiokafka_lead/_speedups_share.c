/*
 * aiokafka_lead._speedups, the share consumer's per-record step (the module and the
 * consumer's loops are in _speedups.c; its ABI covers this file too).
 *
 *   configure_share(ShareConsumerRecord, field_names)
 *       Binds the slots of share.records.ShareConsumerRecord, in field_names' order (the 12
 *       ConsumerRecord fields, then delivery_count and lock_deadline).
 *   build_share_records(rows, topic, partition, timestamp_type, leader_epoch, ranges,
 *                       lock_deadline, floor)
 *       ShareConsumerRecord objects for the Record tuples of one decoded batch that lie in
 *       the acquired ranges (sorted, disjoint (first, last, delivery_count) tuples), at or
 *       above floor, in strictly ascending offset order (a repeated or lower offset is
 *       skipped); the same contract as share.acquire.py_build_share_records. The
 *       dataclass __init__ does not run (the slots are filled directly).
 *
 * The pure-Python version stays the reference: the tests compare both on the same rows.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>

#define SHARE_RECORD_FIELDS 14

static PyTypeObject *share_record_type = NULL; /* share.records.ShareConsumerRecord */
static Py_ssize_t share_record_offsets[SHARE_RECORD_FIELDS];

typedef struct {
    long long first;
    long long last;
    PyObject *count; /* borrowed from the ranges list, which outlives the call */
} AcquiredRange;

static PyObject *
configure_share(PyObject *self, PyObject *args)
{
    PyTypeObject *cls;
    PyObject *names;
    Py_ssize_t i, offsets[SHARE_RECORD_FIELDS];

    if (!PyArg_ParseTuple(args, "O!O!:configure_share", &PyType_Type, &cls, &PyTuple_Type, &names))
        return NULL;
    if (PyTuple_GET_SIZE(names) != SHARE_RECORD_FIELDS) {
        PyErr_Format(PyExc_TypeError, "configure_share: expected %d field names", SHARE_RECORD_FIELDS);
        return NULL;
    }
    if (cls->tp_itemsize != 0 || cls->tp_alloc == NULL) {
        PyErr_SetString(PyExc_TypeError, "configure_share: ShareConsumerRecord must be a fixed-size slots class");
        return NULL;
    }
    for (i = 0; i < SHARE_RECORD_FIELDS; i++) {
        PyObject *name = PyTuple_GET_ITEM(names, i);
        PyObject *descr = PyObject_GetAttr((PyObject *)cls, name); /* inherited slots too */
        PyMemberDef *member;
        if (descr == NULL)
            return NULL;
        if (!Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
            Py_DECREF(descr);
            PyErr_Format(PyExc_TypeError, "configure_share: ShareConsumerRecord.%U is not a slot", name);
            return NULL;
        }
        member = ((PyMemberDescrObject *)descr)->d_member;
        Py_DECREF(descr);
        if (member->type != T_OBJECT_EX || (member->flags & READONLY) || member->offset <= 0 ||
            member->offset + (Py_ssize_t)sizeof(PyObject *) > cls->tp_basicsize) {
            PyErr_Format(PyExc_TypeError, "configure_share: unexpected layout of slot %U", name);
            return NULL;
        }
        offsets[i] = member->offset;
    }
    memcpy(share_record_offsets, offsets, sizeof(offsets));
    Py_INCREF(cls);
    Py_XSETREF(share_record_type, cls);
    Py_RETURN_NONE;
}

static inline void
fill(PyObject *obj, int field, PyObject *value)
{
    /* obj is fresh (its slots NULL); a new reference to value is stored */
    Py_INCREF(value);
    *(PyObject **)((char *)obj + share_record_offsets[field]) = value;
}

/* The serialized size of a key or value: -1 for None (a new reference). */
static PyObject *
data_size(PyObject *data)
{
    Py_ssize_t n;
    if (data == Py_None)
        return PyLong_FromLong(-1);
    n = PyBytes_Check(data) ? PyBytes_GET_SIZE(data) : PyObject_Size(data);
    return n < 0 ? NULL : PyLong_FromSsize_t(n);
}

/* One ShareConsumerRecord from a Record tuple; fields shared by a batch come in `common`:
 * topic, partition, timestamp_type, leader_epoch, lock_deadline. */
static PyObject *
share_record(PyObject *row, PyObject *const *common, PyObject *count)
{
    PyObject *key = PyTuple_GET_ITEM(row, 2), *value = PyTuple_GET_ITEM(row, 3);
    PyObject *headers = PyTuple_GET_ITEM(row, 4);
    PyObject *key_size = NULL, *value_size = NULL, *header_tuple = NULL, *obj = NULL;

    if ((key_size = data_size(key)) == NULL || (value_size = data_size(value)) == NULL)
        goto done;
    header_tuple = PyTuple_CheckExact(headers) ? Py_NewRef(headers) : PySequence_Tuple(headers);
    if (header_tuple == NULL)
        goto done;
    obj = share_record_type->tp_alloc(share_record_type, 0);
    if (obj == NULL)
        goto done;
    fill(obj, 0, common[0]);
    fill(obj, 1, common[1]);
    fill(obj, 2, PyTuple_GET_ITEM(row, 0));
    fill(obj, 3, PyTuple_GET_ITEM(row, 1));
    fill(obj, 4, common[2]);
    fill(obj, 5, key);
    fill(obj, 6, value);
    fill(obj, 7, Py_None);
    fill(obj, 8, key_size);
    fill(obj, 9, value_size);
    fill(obj, 10, header_tuple);
    fill(obj, 11, common[3]);
    fill(obj, 12, count);
    fill(obj, 13, common[4]);
done:
    Py_XDECREF(key_size);
    Py_XDECREF(value_size);
    Py_XDECREF(header_tuple);
    return obj;
}

/* The acquired ranges as C values; -1 with an exception set when one is not a
 * (first, last, delivery_count) tuple of ints. */
static int
read_ranges(PyObject *ranges, AcquiredRange *out, Py_ssize_t n)
{
    Py_ssize_t i;
    for (i = 0; i < n; i++) {
        PyObject *r = PyList_GET_ITEM(ranges, i);
        if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) != 3 || !PyLong_Check(PyTuple_GET_ITEM(r, 0)) ||
            !PyLong_Check(PyTuple_GET_ITEM(r, 1)) || !PyLong_Check(PyTuple_GET_ITEM(r, 2))) {
            PyErr_SetString(PyExc_TypeError,
                            "build_share_records: ranges must be (first, last, delivery_count) int tuples");
            return -1;
        }
        out[i].first = PyLong_AsLongLong(PyTuple_GET_ITEM(r, 0));
        out[i].last = PyLong_AsLongLong(PyTuple_GET_ITEM(r, 1));
        out[i].count = PyTuple_GET_ITEM(r, 2);
        if (PyErr_Occurred())
            return -1;
    }
    return 0;
}

static PyObject *
build_share_records(PyObject *self, PyObject *args)
{
    PyObject *rows, *topic, *partition, *timestamp_type, *leader_epoch, *ranges, *deadline;
    PyObject *common[5], *out = NULL;
    AcquiredRange *acquired = NULL;
    long long floor;
    Py_ssize_t i, j = 0, n_rows, n_ranges;

    if (share_record_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "aiokafka_lead._speedups.configure_share() was not called");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O!UO!O!O!O!O!L:build_share_records", &PyList_Type, &rows, &topic,
                          &PyLong_Type, &partition, &PyLong_Type, &timestamp_type, &PyLong_Type,
                          &leader_epoch, &PyList_Type, &ranges, &PyFloat_Type, &deadline, &floor))
        return NULL;
    common[0] = topic;
    common[1] = partition;
    common[2] = timestamp_type;
    common[3] = leader_epoch;
    common[4] = deadline;
    n_rows = PyList_GET_SIZE(rows);
    n_ranges = PyList_GET_SIZE(ranges);
    acquired = PyMem_New(AcquiredRange, n_ranges ? n_ranges : 1);
    if (acquired == NULL)
        return PyErr_NoMemory();
    if (read_ranges(ranges, acquired, n_ranges) < 0 || (out = PyList_New(0)) == NULL)
        goto error;
    for (i = 0; i < n_rows && j < n_ranges; i++) {
        PyObject *row = PyList_GET_ITEM(rows, i), *obj;
        long long offset;
        int appended;
        if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) != 5 || !PyLong_Check(PyTuple_GET_ITEM(row, 0))) {
            PyErr_SetString(PyExc_TypeError, "build_share_records: rows must be Record tuples");
            goto error;
        }
        offset = PyLong_AsLongLong(PyTuple_GET_ITEM(row, 0));
        if (offset == -1 && PyErr_Occurred())
            goto error;
        if (offset < floor)
            continue;
        while (j < n_ranges && acquired[j].last < offset)
            j++;
        if (j == n_ranges || offset < acquired[j].first)
            continue;
        obj = share_record(row, common, acquired[j].count);
        if (obj == NULL)
            goto error;
        appended = PyList_Append(out, obj);
        Py_DECREF(obj);
        if (appended < 0)
            goto error;
        floor = offset + 1;
    }
    PyMem_Free(acquired);
    return out;
error:
    PyMem_Free(acquired);
    Py_XDECREF(out);
    return NULL;
}

static PyMethodDef share_functions[] = {
    {"configure_share", configure_share, METH_VARARGS,
     "configure_share(ShareConsumerRecord, field_names): bind the share record's slots."},
    {"build_share_records", build_share_records, METH_VARARGS,
     "build_share_records(rows, topic, partition, timestamp_type, leader_epoch, ranges, lock_deadline, "
     "floor) -> list"},
    {NULL, NULL, 0, NULL},
};

int speedups_add_share(PyObject *module);

/* Called by PyInit__speedups: the share consumer's functions, added to the module. */
int
speedups_add_share(PyObject *module)
{
    return PyModule_AddFunctions(module, share_functions);
}
