/* A rebuild's direct path in C: stored log records straight to a PrefixGraph's columns.

   projections.plain_prefix reads a log's plain prefix into columns (see its docstring); this is
   its kernel for the usual record: a msgpack envelope of an entity creation, an observation or
   a relation creation with no other field, stamped after every record before it. `scan` walks
   the raw records from LMDB without a msgspec Struct per event and stops, having changed
   nothing for it, at the first record it does not take for certain: another kind, another
   field, a msgpack shape or value msgspec might read differently, a damaged record, a stamp
   that is not newer, a position out of place, a re-created name. The caller hands that one
   record to the Python path, which decides (the prefix ends, DamagedLogError, or it is plain
   after all and the scan goes on after it). So a record is only ever taken here if the Python
   path takes it with the same fields, and what this decides is only "plain, in the usual
   way": tests/property/test_plain_prefix.py compares the columns and snapshots of both.

   Every read is bounds-checked against the record's length; a record must be exactly one
   msgpack map (trailing bytes are handed over, as msgspec refuses them). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* --- msgpack, bounds-checked: each reader returns 1 if it read, 0 if the record is not
   what this kernel takes (never reading past `end`). --- */

typedef struct {
    const unsigned char *p;
    const unsigned char *end;
} Reader;

static inline int
read_be(Reader *r, int n, uint64_t *out)
{
    if (r->end - r->p < n)
        return 0;
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = (v << 8) | r->p[i];
    r->p += n;
    *out = v;
    return 1;
}

static inline int
read_map(Reader *r, uint32_t *n)
{
    uint64_t v;
    if (r->p >= r->end)
        return 0;
    unsigned char b = *r->p++;
    if ((b & 0xf0) == 0x80) {
        *n = b & 0x0f;
        return 1;
    }
    if (b == 0xde || b == 0xdf) {
        if (!read_be(r, b == 0xde ? 2 : 4, &v))
            return 0;
        *n = (uint32_t)v;
        return 1;
    }
    return 0;
}

static inline int
read_str(Reader *r, const char **s, Py_ssize_t *len)
{
    uint64_t v;
    if (r->p >= r->end)
        return 0;
    unsigned char b = *r->p++;
    if ((b & 0xe0) == 0xa0)
        v = b & 0x1f;
    else if (b == 0xd9 || b == 0xda || b == 0xdb) {
        if (!read_be(r, b == 0xd9 ? 1 : (b == 0xda ? 2 : 4), &v))
            return 0;
    }
    else
        return 0;
    if ((uint64_t)(r->end - r->p) < v)
        return 0;
    *s = (const char *)r->p;
    *len = (Py_ssize_t)v;
    r->p += v;
    return 1;
}

/* An int of any msgpack width, as msgspec reads one into an `int` field; one past int64 (a
   uint64 above INT64_MAX) is handed over: the columns are int64. */
static inline int
read_int(Reader *r, int64_t *out)
{
    uint64_t v;
    if (r->p >= r->end)
        return 0;
    unsigned char b = *r->p++;
    if (b <= 0x7f) {
        *out = b;
        return 1;
    }
    if (b >= 0xe0) {
        *out = (int8_t)b;
        return 1;
    }
    switch (b) {
    case 0xcc: case 0xcd: case 0xce: case 0xcf:
        if (!read_be(r, 1 << (b - 0xcc), &v) || v > (uint64_t)INT64_MAX)
            return 0;
        *out = (int64_t)v;
        return 1;
    case 0xd0:
        if (!read_be(r, 1, &v))
            return 0;
        *out = (int8_t)(uint8_t)v;
        return 1;
    case 0xd1:
        if (!read_be(r, 2, &v))
            return 0;
        *out = (int16_t)(uint16_t)v;
        return 1;
    case 0xd2:
        if (!read_be(r, 4, &v))
            return 0;
        *out = (int32_t)(uint32_t)v;
        return 1;
    case 0xd3:
        if (!read_be(r, 8, &v))
            return 0;
        *out = (int64_t)v;
        return 1;
    default:
        return 0;
    }
}

static inline int
is_key(const char *s, Py_ssize_t len, const char *key, Py_ssize_t key_len)
{
    return len == key_len && memcmp(s, key, (size_t)key_len) == 0;
}
#define IS(s, len, lit) is_key((s), (len), (lit), (Py_ssize_t)(sizeof(lit) - 1))

/* Whether msgspec would decode these bytes to a str (CPython's strict UTF-8). */
static int
valid_utf8(const char *s, Py_ssize_t len)
{
    Py_ssize_t i = 0;
    while (i < len && (unsigned char)s[i] < 0x80)
        i++;
    if (i == len)
        return 1;
    PyObject *decoded = PyUnicode_DecodeUTF8(s, len, NULL);
    if (decoded == NULL) {
        PyErr_Clear();
        return 0;
    }
    Py_DECREF(decoded);
    return 1;
}

/* --- one record ---------------------------------------------------------------------- */

enum { ENTITY = 0, OBSERVATION = 1, RELATION = 2 };

/* The event's fields by slot: name, entity_type | entity, content | from, to, relation_type. */
enum { F_NAME, F_ENTITY_TYPE, F_ENTITY, F_CONTENT, F_FROM, F_TO, F_RELATION_TYPE, F_COUNT };
static const unsigned KIND_FIELDS[3] = {
    (1u << F_NAME) | (1u << F_ENTITY_TYPE),
    (1u << F_ENTITY) | (1u << F_CONTENT),
    (1u << F_FROM) | (1u << F_TO) | (1u << F_RELATION_TYPE),
};
static const int KIND_FIRST[3] = {F_NAME, F_ENTITY, F_FROM};
static const int KIND_WIDTH[3] = {2, 2, 3};

typedef struct {
    int64_t position, seq, hlc;
    const char *origin;
    Py_ssize_t origin_len;
    int kind;
    const char *field[F_COUNT];
    Py_ssize_t field_len[F_COUNT];
} Record;

static int
read_event(Reader *r, Record *rec)
{
    uint32_t n;
    unsigned seen = 0;
    int kind = -1;
    if (!read_map(r, &n))
        return 0;
    for (uint32_t i = 0; i < n; i++) {
        const char *k, *v;
        Py_ssize_t kl, vl;
        int slot;
        if (!read_str(r, &k, &kl) || !read_str(r, &v, &vl))
            return 0;  /* every field of the three kinds, and the tag, is a str */
        if (IS(k, kl, "type")) {
            if (kind != -1)
                return 0;
            if (IS(v, vl, "EntityCreated"))
                kind = ENTITY;
            else if (IS(v, vl, "ObservationAdded"))
                kind = OBSERVATION;
            else if (IS(v, vl, "RelationCreated"))
                kind = RELATION;
            else
                return 0;
            continue;
        }
        if (IS(k, kl, "name"))
            slot = F_NAME;
        else if (IS(k, kl, "entity_type"))
            slot = F_ENTITY_TYPE;
        else if (IS(k, kl, "entity"))
            slot = F_ENTITY;
        else if (IS(k, kl, "content"))
            slot = F_CONTENT;
        else if (IS(k, kl, "from_entity"))
            slot = F_FROM;
        else if (IS(k, kl, "to_entity"))
            slot = F_TO;
        else if (IS(k, kl, "relation_type"))
            slot = F_RELATION_TYPE;
        else
            return 0;
        if (seen & (1u << slot))
            return 0;  /* a repeated key: msgspec's reading of it is not this kernel's to guess */
        seen |= 1u << slot;
        rec->field[slot] = v;
        rec->field_len[slot] = vl;
    }
    /* Exactly the kind's fields: one missing fails the decoder, another is forbidden. */
    if (kind == -1 || seen != KIND_FIELDS[kind])
        return 0;
    rec->kind = kind;
    return 1;
}

/* A Cause (or nil): only checked, as the plain decoder checks it; a rebuild does not keep it. */
static int
read_cause(Reader *r)
{
    uint32_t n;
    unsigned seen = 0;
    if (r->p < r->end && *r->p == 0xc0) {
        r->p++;
        return 1;
    }
    if (!read_map(r, &n))
        return 0;
    for (uint32_t i = 0; i < n; i++) {
        const char *k, *v;
        Py_ssize_t kl, vl;
        int slot;
        if (!read_str(r, &k, &kl))
            return 0;
        if (IS(k, kl, "tool"))
            slot = 0;
        else if (IS(k, kl, "client"))
            slot = 1;
        else if (IS(k, kl, "session"))
            slot = 2;
        else
            return 0;
        if (seen & (1u << slot))
            return 0;
        seen |= 1u << slot;
        if (slot != 0 && r->p < r->end && *r->p == 0xc0) {
            r->p++;  /* client and session may be None */
            continue;
        }
        if (!read_str(r, &v, &vl) || !valid_utf8(v, vl))
            return 0;
    }
    return (seen & 1u) != 0;  /* tool is required */
}

/* The envelope {p, o, s, h, x, e, c?}, each key once, nothing else, and nothing after it. */
static int
read_record(const unsigned char *data, Py_ssize_t size, Record *rec)
{
    Reader r = {data, data + size};
    uint32_t n;
    unsigned seen = 0;
    int64_t tx;
    if (!read_map(&r, &n))
        return 0;
    for (uint32_t i = 0; i < n; i++) {
        const char *k;
        Py_ssize_t kl;
        int slot, ok;
        if (!read_str(&r, &k, &kl) || kl != 1)
            return 0;
        switch (k[0]) {
        case 'p': slot = 0; ok = read_int(&r, &rec->position); break;
        case 'o': slot = 1; ok = read_str(&r, &rec->origin, &rec->origin_len); break;
        case 's': slot = 2; ok = read_int(&r, &rec->seq); break;
        case 'h': slot = 3; ok = read_int(&r, &rec->hlc); break;
        case 'x': slot = 4; ok = read_int(&r, &tx); break;
        case 'e': slot = 5; ok = read_event(&r, rec); break;
        case 'c': slot = 6; ok = read_cause(&r); break;
        default: return 0;
        }
        if (!ok || (seen & (1u << slot)))
            return 0;
        seen |= 1u << slot;
    }
    return (seen & 0x3f) == 0x3f && r.p == r.end;
}

/* --- growing int64 columns ------------------------------------------------------------- */

typedef struct {
    char *data;
    Py_ssize_t size, cap;  /* in bytes */
} Column;

static int
grow(Column *c, Py_ssize_t more)
{
    Py_ssize_t cap = c->cap ? c->cap : 4096;
    while (cap < c->size + more)
        cap *= 2;
    char *data = PyMem_Realloc(c->data, (size_t)cap);
    if (data == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    c->data = data;
    c->cap = cap;
    return 0;
}

static inline int
push(Column *c, int64_t v)
{
    if (c->size + (Py_ssize_t)sizeof v > c->cap && grow(c, sizeof v) < 0)
        return -1;
    memcpy(c->data + c->size, &v, sizeof v);
    c->size += sizeof v;
    return 0;
}

static inline int
push_kind(Column *c, int8_t v)
{
    if (c->size + 1 > c->cap && grow(c, 1) < 0)
        return -1;
    c->data[c->size++] = (char)v;
    return 0;
}

/* The order PlainPrefix._columns lists them in. */
enum {
    C_ENTITY_HLC, C_ENTITY_ORIGIN, C_ENTITY_SEQ,
    C_OBSERVED, C_OBSERVATION_HLC, C_OBSERVATION_ORIGIN, C_OBSERVATION_SEQ,
    C_SOURCES, C_TARGETS, C_RELATION_HLC, C_RELATION_ORIGIN, C_RELATION_SEQ,
    C_KINDS, C_COUNT
};

typedef struct {
    PyObject *index, *origin_ids, *origins, *names, *types, *contents, *relation_types, *stubs;
    PyObject *empty;
    Column col[C_COUNT];
} Scan;

static int
push_stamp(Scan *s, int first, int64_t hlc, int64_t oid, int64_t seq)
{
    return (push(&s->col[first], hlc) < 0 || push(&s->col[first + 1], oid) < 0 ||
            push(&s->col[first + 2], seq) < 0) ? -1 : 0;
}

/* index[name] = len(names); names.append(name); the rest is the caller's. */
static int64_t
add_name(Scan *s, PyObject *name)
{
    Py_ssize_t i = PyList_GET_SIZE(s->names);
    PyObject *at = PyLong_FromSsize_t(i);
    if (at == NULL)
        return -1;
    int failed = PyDict_SetItem(s->index, name, at) < 0 || PyList_Append(s->names, name) < 0;
    Py_DECREF(at);
    return failed ? -1 : (int64_t)i;
}

/* PlainPrefix._found: the entity's index, a stub for a name never created. -1: an error. */
static int64_t
found(Scan *s, PyObject *name)
{
    PyObject *at = PyDict_GetItemWithError(s->index, name);
    if (at != NULL)
        return PyLong_AsLongLong(at);  /* an index PlainPrefix put there: >= 0 */
    if (PyErr_Occurred())
        return -1;
    int64_t i = add_name(s, name);
    if (i < 0 || PyList_Append(s->types, s->empty) < 0 ||
        push_stamp(s, C_ENTITY_HLC, 0, 0, 0) < 0)
        return -1;
    PyObject *stub = PyLong_FromLongLong(i);
    if (stub == NULL)
        return -1;
    int failed = PyList_Append(s->stubs, stub) < 0;
    Py_DECREF(stub);
    return failed ? -1 : i;
}

/* Python's (hlc, origin, seq) > (last): str order is code point order, which UTF-8's byte
   order keeps. */
static int
newer(const Record *rec, int64_t hlc, const char *origin, Py_ssize_t origin_len, int64_t seq)
{
    if (rec->hlc != hlc)
        return rec->hlc > hlc;
    Py_ssize_t common = rec->origin_len < origin_len ? rec->origin_len : origin_len;
    int order = memcmp(rec->origin, origin, (size_t)common);
    if (order != 0)
        return order > 0;
    if (rec->origin_len != origin_len)
        return rec->origin_len > origin_len;
    return rec->seq > seq;
}

/* The result tuple; takes (steals) `last`. */
static PyObject *
build_result(Scan *s, Py_ssize_t read, int64_t position, PyObject *last)
{
    PyObject *columns = PyTuple_New(C_COUNT);
    if (columns == NULL) {
        Py_DECREF(last);
        return NULL;
    }
    for (int c = 0; c < C_COUNT; c++) {
        PyObject *data = PyBytes_FromStringAndSize(s->col[c].data, s->col[c].size);
        if (data == NULL) {
            Py_DECREF(columns);
            Py_DECREF(last);
            return NULL;
        }
        PyTuple_SET_ITEM(columns, c, data);
    }
    return Py_BuildValue("nLNN", read, (long long)position, last, columns);
}

PyDoc_STRVAR(scan_doc,
"scan(raws, start, index, origin_ids, origins, names, types, contents, relation_types, stubs,\n"
"     position, last) -> (read, position, last, columns)\n\n"
"Reads raws[start:] while each is a plain creation, observation or relation record it takes\n"
"for certain (see the module's source); appends to the lists and dicts given as\n"
"PlainPrefix does and returns how many it read, the new position and newest stamp, and the\n"
"int64 columns' new rows as bytes (entity hlc, origin, seq; observed, observation hlc,\n"
"origin, seq; sources, targets, relation hlc, origin, seq; then kinds as int8).");

static PyObject *
scan(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *raws, *last;
    Py_ssize_t start;
    long long position_arg;
    Scan s;
    memset(&s, 0, sizeof s);
    if (!PyArg_ParseTuple(args, "O!nO!O!O!O!O!O!O!O!LO!:scan", &PyList_Type, &raws, &start,
                          &PyDict_Type, &s.index, &PyDict_Type, &s.origin_ids,
                          &PyList_Type, &s.origins, &PyList_Type, &s.names,
                          &PyList_Type, &s.types, &PyList_Type, &s.contents,
                          &PyList_Type, &s.relation_types, &PyList_Type, &s.stubs,
                          &position_arg, &PyTuple_Type, &last))
        return NULL;
    int64_t position = position_arg;
    Py_ssize_t count = PyList_GET_SIZE(raws);
    if (start < 0 || start > count) {
        PyErr_SetString(PyExc_ValueError, "start is outside raws");
        return NULL;
    }
    /* The newest stamp so far: a stamp past int64 (only a record the Python path read can
       hold one) leaves every record to the Python path. */
    if (PyTuple_GET_SIZE(last) != 3 || !PyUnicode_Check(PyTuple_GET_ITEM(last, 1)))
        return PyErr_Format(PyExc_TypeError, "last is not a stamp (hlc, origin, seq)");
    int overflow_hlc, overflow_seq;
    int64_t last_hlc = PyLong_AsLongLongAndOverflow(PyTuple_GET_ITEM(last, 0), &overflow_hlc);
    int64_t last_seq = PyLong_AsLongLongAndOverflow(PyTuple_GET_ITEM(last, 2), &overflow_seq);
    if (PyErr_Occurred())
        return NULL;
    if (overflow_hlc || overflow_seq)
        return build_result(&s, 0, position, Py_NewRef(last));
    PyObject *last_origin = Py_NewRef(PyTuple_GET_ITEM(last, 1));
    Py_ssize_t last_origin_len;
    const char *last_origin_utf8 = PyUnicode_AsUTF8AndSize(last_origin, &last_origin_len);
    /* The origin of the record before, with its id: most records repeat it. */
    PyObject *origin = NULL;
    int64_t oid = 0;
    const char *origin_utf8 = NULL;
    Py_ssize_t origin_len = 0;
    PyObject *field[3] = {NULL, NULL, NULL};
    PyObject *new_origin = NULL;
    PyObject *result = NULL;
    Py_ssize_t i = start;
    s.empty = PyUnicode_New(0, 0);
    if (last_origin_utf8 == NULL || s.empty == NULL)
        goto error;

    for (; i < count; i++) {
        PyObject *raw = PyList_GET_ITEM(raws, i);
        Record rec;
        if (!PyBytes_CheckExact(raw) || position == INT64_MAX)
            break;
        if (!read_record((const unsigned char *)PyBytes_AS_STRING(raw), PyBytes_GET_SIZE(raw),
                         &rec))
            break;
        if (rec.position != position + 1 ||
            !newer(&rec, last_hlc, last_origin_utf8, last_origin_len, last_seq))
            break;
        /* Everything that can refuse the record first, then the changes. */
        int same_origin = origin != NULL && rec.origin_len == origin_len &&
                          memcmp(rec.origin, origin_utf8, (size_t)origin_len) == 0;
        if (!same_origin) {
            new_origin = PyUnicode_DecodeUTF8(rec.origin, rec.origin_len, NULL);
            if (new_origin == NULL) {
                PyErr_Clear();
                break;
            }
        }
        int width = KIND_WIDTH[rec.kind], refused = 0;
        for (int f = 0; f < width; f++) {
            int slot = KIND_FIRST[rec.kind] + f;
            field[f] = PyUnicode_DecodeUTF8(rec.field[slot], rec.field_len[slot], NULL);
            if (field[f] == NULL) {
                PyErr_Clear();
                refused = 1;
                break;
            }
        }
        if (!refused && rec.kind == ENTITY) {
            int known = PyDict_Contains(s.index, field[0]);
            if (known < 0)
                goto error;
            refused = known;  /* a re-creation: the Python path ends the prefix there */
        }
        if (refused) {
            Py_CLEAR(field[0]);
            Py_CLEAR(field[1]);
            Py_CLEAR(field[2]);
            Py_CLEAR(new_origin);
            break;
        }
        if (!same_origin) {
            /* PlainPrefix._origin: ids in first-seen order, each origin once in `origins`. */
            PyObject *known = PyDict_GetItemWithError(s.origin_ids, new_origin);
            if (known == NULL) {
                if (PyErr_Occurred())
                    goto error;
                PyObject *next = PyLong_FromSsize_t(PyDict_GET_SIZE(s.origin_ids));
                if (next == NULL)
                    goto error;
                oid = PyDict_GET_SIZE(s.origin_ids);
                int failed = PyDict_SetItem(s.origin_ids, new_origin, next) < 0;
                Py_DECREF(next);
                if (failed)
                    goto error;
                if (oid == PyList_GET_SIZE(s.origins) && PyList_Append(s.origins, new_origin) < 0)
                    goto error;
            }
            else {
                oid = PyLong_AsLongLong(known);
                if (oid == -1 && PyErr_Occurred())
                    goto error;
            }
            Py_XSETREF(origin, new_origin);
            new_origin = NULL;
            origin_utf8 = PyUnicode_AsUTF8AndSize(origin, &origin_len);
            if (origin_utf8 == NULL)
                goto error;
        }
        if (rec.kind == ENTITY) {
            if (add_name(&s, field[0]) < 0 || PyList_Append(s.types, field[1]) < 0 ||
                push_stamp(&s, C_ENTITY_HLC, rec.hlc, oid, rec.seq) < 0)
                goto error;
        }
        else if (rec.kind == OBSERVATION) {
            int64_t entity = found(&s, field[0]);
            if (entity < 0 || push(&s.col[C_OBSERVED], entity) < 0 ||
                PyList_Append(s.contents, field[1]) < 0 ||
                push_stamp(&s, C_OBSERVATION_HLC, rec.hlc, oid, rec.seq) < 0)
                goto error;
        }
        else {
            int64_t source = found(&s, field[0]);  /* `from` first, as the fold makes stubs */
            if (source < 0 || push(&s.col[C_SOURCES], source) < 0)
                goto error;
            int64_t target = found(&s, field[1]);
            if (target < 0 || push(&s.col[C_TARGETS], target) < 0 ||
                PyList_Append(s.relation_types, field[2]) < 0 ||
                push_stamp(&s, C_RELATION_HLC, rec.hlc, oid, rec.seq) < 0)
                goto error;
        }
        if (push_kind(&s.col[C_KINDS], (int8_t)rec.kind) < 0)
            goto error;
        Py_CLEAR(field[0]);
        Py_CLEAR(field[1]);
        Py_CLEAR(field[2]);
        position = rec.position;
        last_hlc = rec.hlc;
        last_seq = rec.seq;
        Py_SETREF(last_origin, Py_NewRef(origin));
        last_origin_utf8 = origin_utf8;
        last_origin_len = origin_len;
    }
    {
        PyObject *stamp = Py_BuildValue("LOL", (long long)last_hlc, last_origin,
                                        (long long)last_seq);
        if (stamp != NULL)
            result = build_result(&s, i - start, position, stamp);
    }
error:
    /* On an error (no memory) the lists may hold part of a record: the rebuild fails. */
    Py_XDECREF(field[0]);
    Py_XDECREF(field[1]);
    Py_XDECREF(field[2]);
    Py_XDECREF(new_origin);
    Py_XDECREF(origin);
    Py_XDECREF(last_origin);
    Py_XDECREF(s.empty);
    for (int c = 0; c < C_COUNT; c++)
        PyMem_Free(s.col[c].data);
    return result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS, scan_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    "projections._prefix_scan",
    "A rebuild's plain prefix read from raw records in C (projections.plain_prefix's kernel).",
    -1,
    methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC
PyInit__prefix_scan(void)
{
    return PyModule_Create(&module);
}
