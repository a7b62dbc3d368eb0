/* The keys of a restored graph's visible relations, listed from the restore's columns.
 *
 * A restored relation record holds its row, not its key (projections.graph._records
 * RestoredRelationRecord): a whole-graph answer needs every visible key, and keying the
 * records once for it kept a tuple and a dict slot per relation for good (116 bytes; 110 MiB
 * at 1M). In Python the listing is two calls per column and row (~0.7 us a relation); here it
 * is one pass. The pure-Python twin is projections.restored_keys.listed_keys, the same list
 * (tests/property/test_restored_keys.py runs both). No input is trusted: the columns' item
 * size and every index are checked (IndexError, as the twin raises).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* One column of uint32 (array('I')), held for the call. */
static int column(PyObject *obj, Py_buffer *view, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) return -1;
    if (view->itemsize != 4 || view->format == NULL || (view->format[0] != 'I' &&
                                                       view->format[0] != 'L')) {
        PyErr_Format(PyExc_TypeError, "%s must be an array of 4-byte unsigned ints", what);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* table[column[row]], checked; a borrowed reference. */
static PyObject *looked_up(const Py_buffer *col, Py_ssize_t row, PyObject *table,
                           const char *what) {
    if (row < 0 || row >= col->len / 4) {
        PyErr_Format(PyExc_IndexError, "relation row %zd is outside the %s column", row, what);
        return NULL;
    }
    Py_ssize_t at = ((const uint32_t *)col->buf)[row];
    if (at >= PyTuple_GET_SIZE(table)) {
        PyErr_Format(PyExc_IndexError, "the %s column's index %zd is outside its table", what, at);
        return NULL;
    }
    return PyTuple_GET_ITEM(table, at);
}

/* The visible records' keys; `names` and `strings` are tuples, the columns held as buffers. */
static PyObject *keys_of(PyObject *records, PyObject *names, PyObject *strings,
                         Py_buffer *from, Py_buffer *to, Py_buffer *types) {
    PyObject *visible_name = PyUnicode_InternFromString("visible");
    PyObject *row_name = PyUnicode_InternFromString("row");
    Py_ssize_t size = PyTuple_GET_SIZE(records);
    PyObject *keys = PyList_New(0);
    if (visible_name == NULL || row_name == NULL || keys == NULL) goto fail;
    for (Py_ssize_t i = 0; i < size; i++) {
        PyObject *record = PyTuple_GET_ITEM(records, i);
        PyObject *visible = PyObject_GetAttr(record, visible_name);
        if (visible == NULL) goto fail;
        int shown = PyObject_IsTrue(visible);
        Py_DECREF(visible);
        if (shown < 0) goto fail;
        if (!shown) continue;
        PyObject *row_obj = PyObject_GetAttr(record, row_name);
        if (row_obj == NULL) goto fail;
        Py_ssize_t row = PyLong_AsSsize_t(row_obj);
        Py_DECREF(row_obj);
        if (row == -1 && PyErr_Occurred()) goto fail;
        PyObject *source = looked_up(from, row, names, "from_entities");
        if (source == NULL) goto fail;
        PyObject *target = looked_up(to, row, names, "to_entities");
        if (target == NULL) goto fail;
        PyObject *type = looked_up(types, row, strings, "relation_types");
        if (type == NULL) goto fail;
        PyObject *key = PyTuple_Pack(3, source, target, type);
        if (key == NULL) goto fail;
        int appended = PyList_Append(keys, key);
        Py_DECREF(key);
        if (appended < 0) goto fail;
    }
    Py_DECREF(visible_name);
    Py_DECREF(row_name);
    return keys;
fail:
    Py_XDECREF(visible_name);
    Py_XDECREF(row_name);
    Py_XDECREF(keys);
    return NULL;
}

PyDoc_STRVAR(listed_keys_doc,
             "listed_keys(records, columns)\n--\n\n"
             "(names[from_entities[r.row]], names[to_entities[r.row]],\n"
             "strings[relation_types[r.row]]) for each record r whose `visible` is true, in\n"
             "order: `records` a tuple, the others attributes of `columns` (`names` and\n"
             "`strings` tuples of str, the three columns arrays of 'I').");

static PyObject *listed_keys(PyObject *module, PyObject *args) {
    PyObject *records, *columns;
    if (!PyArg_ParseTuple(args, "O!O:listed_keys", &PyTuple_Type, &records, &columns))
        return NULL;
    PyObject *names = PyObject_GetAttrString(columns, "names");
    PyObject *strings = PyObject_GetAttrString(columns, "strings");
    PyObject *from_obj = PyObject_GetAttrString(columns, "from_entities");
    PyObject *to_obj = PyObject_GetAttrString(columns, "to_entities");
    PyObject *types_obj = PyObject_GetAttrString(columns, "relation_types");
    PyObject *keys = NULL;
    Py_buffer from, to, types;
    int held = 0; /* how many buffers are held */
    if (names == NULL || strings == NULL || from_obj == NULL || to_obj == NULL ||
        types_obj == NULL)
        goto done;
    if (!PyTuple_Check(names) || !PyTuple_Check(strings)) {
        PyErr_SetString(PyExc_TypeError, "the columns' names and strings must be tuples");
        goto done;
    }
    if (column(from_obj, &from, "from_entities") < 0) goto done;
    held = 1;
    if (column(to_obj, &to, "to_entities") < 0) goto done;
    held = 2;
    if (column(types_obj, &types, "relation_types") < 0) goto done;
    held = 3;
    keys = keys_of(records, names, strings, &from, &to, &types);
done:
    if (held >= 3) PyBuffer_Release(&types);
    if (held >= 2) PyBuffer_Release(&to);
    if (held >= 1) PyBuffer_Release(&from);
    Py_XDECREF(names);
    Py_XDECREF(strings);
    Py_XDECREF(from_obj);
    Py_XDECREF(to_obj);
    Py_XDECREF(types_obj);
    return keys;
}

static PyMethodDef methods[] = {
    {"listed_keys", listed_keys, METH_VARARGS, listed_keys_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "projections._restored_keys",
    "The keys of a restored graph's visible relations (see projections._restored_keys.c).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__restored_keys(void) { return PyModule_Create(&module_def); }
