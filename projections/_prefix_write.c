/* The compiled writers of a plain prefix's checkpoints: msgpack written straight from the
 * PrefixGraph's columns (projections.graph._prefix, projections.prefix_conflicts).
 *
 * Each function here writes exactly the bytes its pure-Python twin writes with msgspec (the
 * smallest int encoding, str8/16/32, array and map headers): the twins stay as the fallback
 * and tests/property/test_prefix_write.py runs both against the fold. No input is trusted: every
 * index is checked against its column (IndexError, as the Python path raises), every column's
 * type and length is checked (TypeError / ValueError), and every allocation is checked.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* ---- an output buffer: a bytes object grown in place ------------------------------------ */

typedef struct {
    PyObject *bytes; /* the result, over-allocated until finish() */
    char *data;
    Py_ssize_t len;
    Py_ssize_t cap;
} Out;

static int out_init(Out *out, Py_ssize_t cap) {
    if (cap < 64) cap = 64;
    out->bytes = PyBytes_FromStringAndSize(NULL, cap);
    if (out->bytes == NULL) return -1;
    out->data = PyBytes_AS_STRING(out->bytes);
    out->len = 0;
    out->cap = cap;
    return 0;
}

static int out_grow(Out *out, Py_ssize_t need) {
    Py_ssize_t cap = out->cap;
    while (cap - out->len < need) {
        if (cap > PY_SSIZE_T_MAX / 2) {
            PyErr_NoMemory();
            return -1;
        }
        cap *= 2;
    }
    if (_PyBytes_Resize(&out->bytes, cap) < 0) return -1; /* frees it on failure */
    out->data = PyBytes_AS_STRING(out->bytes);
    out->cap = cap;
    return 0;
}

/* Room for `need` more bytes (the caller writes them at out->data + out->len). */
static inline int out_room(Out *out, Py_ssize_t need) {
    if (out->cap - out->len >= need) return 0;
    return out_grow(out, need);
}

static PyObject *out_finish(Out *out) {
    if (_PyBytes_Resize(&out->bytes, out->len) < 0) return NULL;
    PyObject *result = out->bytes;
    out->bytes = NULL;
    return result;
}

static void out_drop(Out *out) { Py_CLEAR(out->bytes); }

static inline void put_be16(char *p, uint16_t v) {
    p[0] = (char)(v >> 8);
    p[1] = (char)v;
}

static inline void put_be32(char *p, uint32_t v) {
    p[0] = (char)(v >> 24);
    p[1] = (char)(v >> 16);
    p[2] = (char)(v >> 8);
    p[3] = (char)v;
}

static inline void put_be64(char *p, uint64_t v) {
    put_be32(p, (uint32_t)(v >> 32));
    put_be32(p + 4, (uint32_t)v);
}

/* An integer as msgspec writes it: a fixint, else the smallest uint (>= 0) or int (< 0). */
static inline int put_int(Out *out, int64_t v) {
    if (out_room(out, 9) < 0) return -1;
    char *p = out->data + out->len;
    if (v >= 0) {
        uint64_t u = (uint64_t)v;
        if (u < 128) {
            p[0] = (char)u;
            out->len += 1;
        } else if (u <= 0xff) {
            p[0] = (char)0xcc;
            p[1] = (char)u;
            out->len += 2;
        } else if (u <= 0xffff) {
            p[0] = (char)0xcd;
            put_be16(p + 1, (uint16_t)u);
            out->len += 3;
        } else if (u <= 0xffffffffu) {
            p[0] = (char)0xce;
            put_be32(p + 1, (uint32_t)u);
            out->len += 5;
        } else {
            p[0] = (char)0xcf;
            put_be64(p + 1, u);
            out->len += 9;
        }
    } else if (v >= -32) {
        p[0] = (char)(int8_t)v;
        out->len += 1;
    } else if (v >= INT8_MIN) {
        p[0] = (char)0xd0;
        p[1] = (char)(int8_t)v;
        out->len += 2;
    } else if (v >= INT16_MIN) {
        p[0] = (char)0xd1;
        put_be16(p + 1, (uint16_t)(int16_t)v);
        out->len += 3;
    } else if (v >= INT32_MIN) {
        p[0] = (char)0xd2;
        put_be32(p + 1, (uint32_t)(int32_t)v);
        out->len += 5;
    } else {
        p[0] = (char)0xd3;
        put_be64(p + 1, (uint64_t)v);
        out->len += 9;
    }
    return 0;
}

/* A container header: fix form below 16 items, else 16 or 32 bits (fix: 0x90 array, 0x80 map). */
static inline int put_header(Out *out, Py_ssize_t n, unsigned char fix, unsigned char b16,
                             unsigned char b32) {
    if (out_room(out, 5) < 0) return -1;
    char *p = out->data + out->len;
    if (n < 16) {
        p[0] = (char)(fix | (unsigned char)n);
        out->len += 1;
    } else if (n <= 0xffff) {
        p[0] = (char)b16;
        put_be16(p + 1, (uint16_t)n);
        out->len += 3;
    } else if ((uint64_t)n <= 0xffffffffu) {
        p[0] = (char)b32;
        put_be32(p + 1, (uint32_t)n);
        out->len += 5;
    } else {
        PyErr_SetString(PyExc_ValueError, "a msgpack container holds at most 2**32 - 1 items");
        return -1;
    }
    return 0;
}

static inline int put_array(Out *out, Py_ssize_t n) { return put_header(out, n, 0x90, 0xdc, 0xdd); }
static inline int put_map(Out *out, Py_ssize_t n) { return put_header(out, n, 0x80, 0xde, 0xdf); }

/* UTF-8 bytes as a msgpack str (fixstr below 32 bytes, then str8, str16, str32). */
static inline int put_utf8(Out *out, const char *s, Py_ssize_t n) {
    if (out_room(out, n + 5) < 0) return -1;
    char *p = out->data + out->len;
    if (n < 32) {
        p[0] = (char)(0xa0 | n);
        p += 1;
    } else if (n <= 0xff) {
        p[0] = (char)0xd9;
        p[1] = (char)n;
        p += 2;
    } else if (n <= 0xffff) {
        p[0] = (char)0xda;
        put_be16(p + 1, (uint16_t)n);
        p += 3;
    } else if ((uint64_t)n <= 0xffffffffu) {
        p[0] = (char)0xdb;
        put_be32(p + 1, (uint32_t)n);
        p += 5;
    } else {
        PyErr_SetString(PyExc_ValueError, "a msgpack str holds at most 2**32 - 1 bytes");
        return -1;
    }
    memcpy(p, s, (size_t)n);
    out->len = (p - out->data) + n;
    return 0;
}

static inline int put_str(Out *out, PyObject *s) {
    if (!PyUnicode_Check(s)) {
        PyErr_Format(PyExc_TypeError, "expected a str, got %.100s", Py_TYPE(s)->tp_name);
        return -1;
    }
    Py_ssize_t n;
    const char *utf8 = PyUnicode_AsUTF8AndSize(s, &n);
    if (utf8 == NULL) return -1;
    return put_utf8(out, utf8, n);
}

/* ---- columns ---------------------------------------------------------------------------- */

/* A column of int64 (array("q") or a numpy int64 array): its items, borrowed from the buffer. */
typedef struct {
    Py_buffer view;
    const int64_t *items;
    Py_ssize_t len;
    int held;
} Ints;

static int ints_get(PyObject *obj, Ints *col, const char *what) {
    col->held = 0;
    if (PyObject_GetBuffer(obj, &col->view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) return -1;
    col->held = 1;
    const char *f = col->view.format ? col->view.format : "B";
    if (f[0] == '<' || f[0] == '=' || f[0] == '@') f++;
    if (col->view.itemsize != 8 || (strcmp(f, "q") != 0 && strcmp(f, "l") != 0) ||
        col->view.ndim > 1) {
        PyErr_Format(PyExc_TypeError, "%s: expected a column of int64, got format %s", what,
                     col->view.format ? col->view.format : "B");
        return -1;
    }
    col->items = (const int64_t *)col->view.buf;
    col->len = col->view.len / 8;
    return 0;
}

static void ints_release(Ints *col) {
    if (col->held) PyBuffer_Release(&col->view);
    col->held = 0;
}

static int check_len(Py_ssize_t got, Py_ssize_t want, const char *what) {
    if (got == want) return 0;
    PyErr_Format(PyExc_ValueError, "%s: %zd items where %zd were expected", what, got, want);
    return -1;
}

static int check_index(int64_t i, Py_ssize_t size, const char *what) {
    if (i >= 0 && i < size) return 0;
    PyErr_Format(PyExc_IndexError, "%s: index %lld out of range (%zd items)", what, (long long)i,
                 size);
    return -1;
}

/* ---- a set of keys, for each row its key's first row ------------------------------------ */

static inline uint64_t mix(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

/* firsts[r] = the first row whose key equals row r's, a key being (a[r], b[r], strings[r]) (b
 * NULL: (a[r], strings[r])). Strings compare by value, as the dict of the Python path does. */
static int first_rows(const int64_t *a, const int64_t *b, PyObject *strings, Py_ssize_t rows,
                      int64_t *firsts) {
    size_t cap = 16;
    while (cap < (size_t)rows * 2) cap <<= 1;
    int64_t *slots = PyMem_Malloc(cap * sizeof(int64_t));
    uint64_t *hashes = PyMem_Malloc((rows ? (size_t)rows : 1) * sizeof(uint64_t));
    if (slots == NULL || hashes == NULL) {
        PyMem_Free(slots);
        PyMem_Free(hashes);
        PyErr_NoMemory();
        return -1;
    }
    memset(slots, 0xff, cap * sizeof(int64_t)); /* -1: empty */
    PyObject **items = PySequence_Fast_ITEMS(strings);
    for (Py_ssize_t r = 0; r < rows; r++) {
        /* Exact str only: hashing or comparing a subclass could run Python code that changes
         * the list under the borrowed `items` (the scan only ever decodes plain str). */
        if (!PyUnicode_CheckExact(items[r])) {
            PyErr_Format(PyExc_TypeError, "expected a str, got %.100s", Py_TYPE(items[r])->tp_name);
            goto fail;
        }
        Py_hash_t sh = PyObject_Hash(items[r]);
        if (sh == -1 && PyErr_Occurred()) goto fail;
        uint64_t h = mix((uint64_t)sh ^ mix((uint64_t)a[r] * 0x9e3779b97f4a7c15ULL +
                                            (b ? (uint64_t)b[r] * 0xc2b2ae3d27d4eb4fULL : 0)));
        hashes[r] = h;
        size_t at = (size_t)h & (cap - 1);
        for (;;) {
            int64_t other = slots[at];
            if (other < 0) {
                slots[at] = r;
                firsts[r] = r;
                break;
            }
            if (hashes[other] == h && a[other] == a[r] && (b == NULL || b[other] == b[r])) {
                int same = PyObject_RichCompareBool(items[other], items[r], Py_EQ);
                if (same < 0) goto fail;
                if (same) {
                    firsts[r] = other;
                    break;
                }
            }
            at = (at + 1) & (cap - 1);
        }
    }
    PyMem_Free(slots);
    PyMem_Free(hashes);
    return 0;
fail:
    PyMem_Free(slots);
    PyMem_Free(hashes);
    return -1;
}

/* ---- the conflicts model's snapshot ------------------------------------------------------ */

typedef struct {
    Ints hlc, origin, seq;
} Stamps;

static const char *const TAGS[3] = {"EntityCreated", "ObservationAdded", "RelationCreated"};

typedef struct {
    PyObject *origins;  /* the graph's origin strings (a list) */
    Py_ssize_t *canon;  /* an origin id to the first id with an equal string */
    Py_ssize_t norigins;
} Origins;

static int put_write(Out *out, Origins *o, Stamps *s, Py_ssize_t row, int kind) {
    int64_t origin = s->origin.items[row];
    if (check_index(origin, o->norigins, "an origin id") < 0) return -1;
    if (put_array(out, 4) < 0 || put_int(out, s->hlc.items[row]) < 0 ||
        put_str(out, PyList_GET_ITEM(o->origins, origin)) < 0 ||
        put_int(out, s->seq.items[row]) < 0)
        return -1;
    return put_utf8(out, TAGS[kind], (Py_ssize_t)strlen(TAGS[kind]));
}

/* The element whose first row is `row` and later writes follow `next` from it: each origin's
 * latest write, one write alone or {origin: write} in the order origins first wrote it
 * (projections.prefix_conflicts._folded, ConflictsProjection.apply_all). */
static int put_folded(Out *out, Origins *o, Stamps *s, Py_ssize_t row, const int64_t *next,
                      int kind) {
    Py_ssize_t seen_n = 0, seen_cap = 4;
    Py_ssize_t *seen = PyMem_Malloc(seen_cap * 2 * sizeof(Py_ssize_t)); /* (origin, row) */
    if (seen == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    int rc = -1;
    for (int64_t r = row; r >= 0; r = next[r]) {
        int64_t id = s->origin.items[r];
        if (check_index(id, o->norigins, "an origin id") < 0) goto done;
        Py_ssize_t origin = o->canon[id], k;
        for (k = 0; k < seen_n && seen[2 * k] != origin; k++) {
        }
        if (k == seen_n) {
            if (seen_n == seen_cap) {
                Py_ssize_t *grown = PyMem_Realloc(seen, seen_cap * 4 * sizeof(Py_ssize_t));
                if (grown == NULL) {
                    PyErr_NoMemory();
                    goto done;
                }
                seen = grown;
                seen_cap *= 2;
            }
            seen[2 * k] = origin;
            seen_n++;
        }
        seen[2 * k + 1] = (Py_ssize_t)r;
    }
    if (seen_n == 1) {
        rc = put_write(out, o, s, seen[1], kind);
        goto done;
    }
    if (put_map(out, seen_n) < 0) goto done;
    for (Py_ssize_t k = 0; k < seen_n; k++) {
        if (put_str(out, PyList_GET_ITEM(o->origins, s->origin.items[seen[2 * k + 1]])) < 0 ||
            put_write(out, o, s, seen[2 * k + 1], kind) < 0)
            goto done;
    }
    rc = 0;
done:
    PyMem_Free(seen);
    return rc;
}

/* Links each row written again to its first row's chain: next[r] the key's next row after r
 * (-1: none); kept[r] 0 for a row that is not its key's first. Returns the rows dropped. */
static Py_ssize_t chain(const int64_t *firsts, Py_ssize_t rows, int64_t *next, char *kept) {
    Py_ssize_t dropped = 0;
    int64_t *tail = PyMem_Malloc((rows ? (size_t)rows : 1) * sizeof(int64_t));
    if (tail == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t r = 0; r < rows; r++) {
        next[r] = -1;
        kept[r] = firsts[r] == r;
        if (kept[r]) {
            tail[r] = r;
        } else {
            next[tail[firsts[r]]] = r;
            tail[firsts[r]] = r;
            dropped++;
        }
    }
    PyMem_Free(tail);
    return dropped;
}

static PyObject *get_list(PyObject *graph, const char *name) {
    PyObject *value = PyObject_GetAttrString(graph, name);
    if (value != NULL && !PyList_Check(value)) {
        PyErr_Format(PyExc_TypeError, "PrefixGraph.%s: expected a list", name);
        Py_CLEAR(value);
    }
    return value;
}

static int get_ints(PyObject *graph, const char *name, Ints *col) {
    PyObject *value = PyObject_GetAttrString(graph, name);
    if (value == NULL) return -1;
    int rc = ints_get(value, col, name);
    Py_DECREF(value);
    return rc;
}

/* The graph's int64 columns this reads, in the order `cols` holds them. */
#define N_INTS 12
static const char *const INT_COLUMNS[N_INTS] = {
    "entity_hlc", "entity_origin", "entity_seq", "observation_hlc", "observation_origin",
    "observation_seq", "relation_hlc", "relation_origin", "relation_seq", "observed",
    "sources", "targets"};

PyDoc_STRVAR(conflicts_doc,
             "conflicts_snapshot(graph: PrefixGraph) -> bytes\n\n"
             "ConflictsProjection.to_snapshot after folding the prefix `graph` holds: the bytes\n"
             "projections.prefix_conflicts writes in Python.");

static PyObject *conflicts_snapshot(PyObject *module, PyObject *graph) {
    (void)module;
    PyObject *result = NULL, *names = NULL, *origins = NULL, *contents = NULL, *types = NULL,
             *stubs = NULL, *position = NULL, *kinds_obj = NULL;
    Ints cols[N_INTS];
    Py_buffer kinds = {0};
    int kinds_held = 0;
    char *created = NULL, *kept = NULL;
    int64_t *firsts = NULL, *next = NULL;
    Py_ssize_t *canon = NULL;
    Out out = {0};
    for (int i = 0; i < N_INTS; i++) cols[i].held = 0;

    if ((names = get_list(graph, "names")) == NULL || (origins = get_list(graph, "origins")) == NULL ||
        (contents = get_list(graph, "contents")) == NULL ||
        (types = get_list(graph, "relation_types")) == NULL ||
        (stubs = get_list(graph, "stubs")) == NULL ||
        (position = PyObject_GetAttrString(graph, "position")) == NULL ||
        (kinds_obj = PyObject_GetAttrString(graph, "kinds")) == NULL)
        goto done;
    for (int i = 0; i < N_INTS; i++)
        if (get_ints(graph, INT_COLUMNS[i], &cols[i]) < 0) goto done;
    if (PyObject_GetBuffer(kinds_obj, &kinds, PyBUF_C_CONTIGUOUS) < 0) goto done;
    kinds_held = 1;
    if (kinds.itemsize != 1) {
        PyErr_SetString(PyExc_TypeError, "kinds: expected a column of int8");
        goto done;
    }
    Stamps stamps[3] = {{cols[0], cols[1], cols[2]}, {cols[3], cols[4], cols[5]},
                        {cols[6], cols[7], cols[8]}};
    Ints *observed = &cols[9], *sources = &cols[10], *targets = &cols[11];
    Py_ssize_t n = PyList_GET_SIZE(names), nobs = observed->len, nrel = sources->len;
    long long at = PyLong_AsLongLong(position);
    if (at == -1 && PyErr_Occurred()) goto done;
    if (check_len(stamps[0].hlc.len, n, "entity_hlc") < 0 ||
        check_len(stamps[0].origin.len, n, "entity_origin") < 0 ||
        check_len(stamps[0].seq.len, n, "entity_seq") < 0 ||
        check_len(PyList_GET_SIZE(contents), nobs, "contents") < 0 ||
        check_len(stamps[1].hlc.len, nobs, "observation_hlc") < 0 ||
        check_len(stamps[1].origin.len, nobs, "observation_origin") < 0 ||
        check_len(stamps[1].seq.len, nobs, "observation_seq") < 0 ||
        check_len(targets->len, nrel, "targets") < 0 ||
        check_len(PyList_GET_SIZE(types), nrel, "relation_types") < 0 ||
        check_len(stamps[2].hlc.len, nrel, "relation_hlc") < 0 ||
        check_len(stamps[2].origin.len, nrel, "relation_origin") < 0 ||
        check_len(stamps[2].seq.len, nrel, "relation_seq") < 0)
        goto done;

    /* Which entities were created (the stubs never were). */
    created = PyMem_Malloc(n ? (size_t)n : 1);
    if (created == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    memset(created, 1, (size_t)n);
    Py_ssize_t ncreated = n;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(stubs); i++) {
        Py_ssize_t stub = PyLong_AsSsize_t(PyList_GET_ITEM(stubs, i));
        if (stub == -1 && PyErr_Occurred()) goto done;
        if (check_index(stub, n, "a stub") < 0) goto done;
        ncreated -= created[stub];
        created[stub] = 0;
    }
    for (Py_ssize_t r = 0; r < nobs; r++)
        if (check_index(observed->items[r], n, "an observed entity") < 0) goto done;
    for (Py_ssize_t r = 0; r < nrel; r++)
        if (check_index(sources->items[r], n, "a relation's source") < 0 ||
            check_index(targets->items[r], n, "a relation's target") < 0)
            goto done;

    /* Origin ids that name equal strings are one origin, as the Python path compares them. */
    Py_ssize_t norigins = PyList_GET_SIZE(origins);
    canon = PyMem_Malloc((norigins ? (size_t)norigins : 1) * sizeof(Py_ssize_t));
    if (canon == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < norigins; i++) {
        if (!PyUnicode_CheckExact(PyList_GET_ITEM(origins, i))) { /* see first_rows */
            PyErr_SetString(PyExc_TypeError, "origins: expected a list of str");
            goto done;
        }
    }
    for (Py_ssize_t i = 0; i < norigins; i++) {
        canon[i] = i;
        for (Py_ssize_t j = 0; j < i; j++) {
            int same = PyObject_RichCompareBool(PyList_GET_ITEM(origins, j),
                                                PyList_GET_ITEM(origins, i), Py_EQ);
            if (same < 0) goto done;
            if (same) {
                canon[i] = canon[j];
                break;
            }
        }
    }
    Origins o = {origins, canon, norigins};

    /* Observation rows then relation rows: each row's first, its next write, kept or not. */
    Py_ssize_t rows = nobs + nrel;
    firsts = PyMem_Malloc((rows ? (size_t)rows : 1) * sizeof(int64_t));
    next = PyMem_Malloc((rows ? (size_t)rows : 1) * sizeof(int64_t));
    kept = PyMem_Malloc(rows ? (size_t)rows : 1);
    if (firsts == NULL || next == NULL || kept == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (first_rows(observed->items, NULL, contents, nobs, firsts) < 0 ||
        first_rows(sources->items, targets->items, types, nrel, firsts + nobs) < 0)
        goto done;
    Py_ssize_t dropped_obs = chain(firsts, nobs, next, kept);
    if (dropped_obs < 0) goto done;
    Py_ssize_t dropped_rel = chain(firsts + nobs, nrel, next + nobs, kept + nobs);
    if (dropped_rel < 0) goto done;

    const char *kind_of = (const char *)kinds.buf;
    Py_ssize_t nkinds = kinds.len, counted[3] = {0, 0, 0};
    for (Py_ssize_t k = 0; k < nkinds; k++) {
        if (kind_of[k] < 0 || kind_of[k] > 2) {
            PyErr_Format(PyExc_ValueError, "kinds: %d is not a kind (0, 1, 2)", kind_of[k]);
            goto done;
        }
        counted[(int)kind_of[k]]++;
    }
    if (check_len(counted[0], ncreated, "kinds (creations)") < 0 ||
        check_len(counted[1], nobs, "kinds (observations)") < 0 ||
        check_len(counted[2], nrel, "kinds (relations)") < 0)
        goto done;

    /* About 120 bytes an element at a real log's sizes: one or two doublings at most. */
    if (out_init(&out, 64 + 96 * (ncreated + rows)) < 0) goto done;
    if (put_array(&out, 2) < 0 || put_int(&out, (int64_t)at) < 0 ||
        put_map(&out, ncreated + rows - dropped_obs - dropped_rel) < 0)
        goto done;
    Py_ssize_t entity = 0, obs = 0, rel = 0;
    for (Py_ssize_t k = 0; k < nkinds; k++) {
        if (kind_of[k] == 0) {
            while (!created[entity]) entity++; /* counted: a created one is left */
            if (put_array(&out, 2) < 0 || put_utf8(&out, "entity", 6) < 0 ||
                put_str(&out, PyList_GET_ITEM(names, entity)) < 0 ||
                put_write(&out, &o, &stamps[0], entity, 0) < 0)
                goto done;
            entity++;
        } else if (kind_of[k] == 1) {
            Py_ssize_t r = obs++;
            if (!kept[r]) continue;
            if (put_array(&out, 3) < 0 || put_utf8(&out, "observation", 11) < 0 ||
                put_str(&out, PyList_GET_ITEM(names, observed->items[r])) < 0 ||
                put_str(&out, PyList_GET_ITEM(contents, r)) < 0)
                goto done;
            if (next[r] < 0 ? put_write(&out, &o, &stamps[1], r, 1)
                            : put_folded(&out, &o, &stamps[1], r, next, 1))
                goto done;
        } else {
            Py_ssize_t r = rel++;
            if (!kept[nobs + r]) continue;
            if (put_array(&out, 4) < 0 || put_utf8(&out, "relation", 8) < 0 ||
                put_str(&out, PyList_GET_ITEM(names, sources->items[r])) < 0 ||
                put_str(&out, PyList_GET_ITEM(names, targets->items[r])) < 0 ||
                put_str(&out, PyList_GET_ITEM(types, r)) < 0)
                goto done;
            if (next[nobs + r] < 0 ? put_write(&out, &o, &stamps[2], r, 2)
                                   : put_folded(&out, &o, &stamps[2], r, next + nobs, 2))
                goto done;
        }
    }
    result = out_finish(&out);
done:
    out_drop(&out);
    PyMem_Free(created);
    PyMem_Free(kept);
    PyMem_Free(firsts);
    PyMem_Free(next);
    PyMem_Free(canon);
    if (kinds_held) PyBuffer_Release(&kinds);
    for (int i = 0; i < N_INTS; i++) ints_release(&cols[i]);
    Py_XDECREF(names);
    Py_XDECREF(origins);
    Py_XDECREF(contents);
    Py_XDECREF(types);
    Py_XDECREF(stubs);
    Py_XDECREF(position);
    Py_XDECREF(kinds_obj);
    return result;
}

/* ---- the graph's packed occurrences ------------------------------------------------------ */

PyDoc_STRVAR(occurrences_doc,
             "pack_occurrences(contents, order, ends, (hlcs, origins, seqs)) -> (bytes, list[bytes])\n\n"
             "Each entity's occurrences packed as the graph codec packs them (msgpack of\n"
             "Occurrences: contents, hlcs, origins, seqs), for the entities with any: rows\n"
             "order[ends[i-1]:ends[i]] are entity i's, the stamp columns already in that order.\n"
             "Returns the entities' indexes as little-endian uint32 and their packed bytes.");

static PyObject *pack_occurrences(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *contents, *order_obj, *ends_obj, *hlc_obj, *origin_obj, *seq_obj;
    if (!PyArg_ParseTuple(args, "O!OO(OOO):pack_occurrences", &PyList_Type, &contents, &order_obj,
                          &ends_obj, &hlc_obj, &origin_obj, &seq_obj))
        return NULL;
    Ints order, ends, cols[3];
    order.held = ends.held = cols[0].held = cols[1].held = cols[2].held = 0;
    PyObject *result = NULL, *packed = NULL, *at_bytes = NULL;
    Out out = {0};
    if (ints_get(order_obj, &order, "order") < 0 || ints_get(ends_obj, &ends, "ends") < 0 ||
        ints_get(hlc_obj, &cols[0], "hlcs") < 0 || ints_get(origin_obj, &cols[1], "origins") < 0 ||
        ints_get(seq_obj, &cols[2], "seqs") < 0)
        goto done;
    Py_ssize_t rows = order.len, ncontents = PyList_GET_SIZE(contents);
    if (check_len(cols[0].len, rows, "hlcs") < 0 || check_len(cols[1].len, rows, "origins") < 0 ||
        check_len(cols[2].len, rows, "seqs") < 0)
        goto done;
    Py_ssize_t with = 0;
    int64_t start = 0;
    for (Py_ssize_t i = 0; i < ends.len; i++) {
        int64_t end = ends.items[i];
        if (end < start || end > rows) {
            PyErr_SetString(PyExc_ValueError, "ends: not a rising run of rows within order");
            goto done;
        }
        with += end > start;
        start = end;
    }
    if ((uint64_t)ends.len > 0xffffffffu) {
        PyErr_SetString(PyExc_ValueError, "ends: more entities than a uint32 indexes");
        goto done;
    }
    if ((packed = PyList_New(with)) == NULL) goto done;
    if ((at_bytes = PyBytes_FromStringAndSize(NULL, with * 4)) == NULL) goto done;
    char *at = PyBytes_AS_STRING(at_bytes);
    /* One scratch buffer for every entity's msgpack, each copied out at its size. */
    if (out_init(&out, 1 << 16) < 0) goto done;
    Py_ssize_t listed = 0;
    start = 0;
    for (Py_ssize_t i = 0; i < ends.len; i++) {
        int64_t end = ends.items[i], count = end - start;
        if (count == 0) continue;
        out.len = 0;
        if (put_array(&out, 4) < 0 || put_array(&out, count) < 0) goto done;
        for (int64_t r = start; r < end; r++) {
            int64_t row = order.items[r];
            if (check_index(row, ncontents, "order") < 0 ||
                put_str(&out, PyList_GET_ITEM(contents, row)) < 0)
                goto done;
        }
        for (int c = 0; c < 3; c++) {
            if (put_array(&out, count) < 0) goto done;
            for (int64_t r = start; r < end; r++)
                if (put_int(&out, cols[c].items[r]) < 0) goto done;
        }
        PyObject *one = PyBytes_FromStringAndSize(out.data, out.len);
        if (one == NULL) goto done;
        PyList_SET_ITEM(packed, listed, one);
        uint32_t index = (uint32_t)i;
        at[4 * listed] = (char)index; /* little-endian, as the codec's columns */
        at[4 * listed + 1] = (char)(index >> 8);
        at[4 * listed + 2] = (char)(index >> 16);
        at[4 * listed + 3] = (char)(index >> 24);
        listed++;
        start = end;
    }
    result = PyTuple_Pack(2, at_bytes, packed);
done:
    out_drop(&out);
    Py_XDECREF(packed);
    Py_XDECREF(at_bytes);
    ints_release(&order);
    ints_release(&ends);
    for (int c = 0; c < 3; c++) ints_release(&cols[c]);
    return result;
}

/* ---- relation keys ----------------------------------------------------------------------- */

PyDoc_STRVAR(key_rows_doc,
             "key_rows(sources, targets, relation_types) -> (bytes, bytes)\n\n"
             "For each relation row, the first and the last row with the same key (source,\n"
             "target, type), as two native int64 columns (projections.graph.relation_keys).");

static PyObject *key_rows(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *sources_obj, *targets_obj, *types;
    if (!PyArg_ParseTuple(args, "OOO!:key_rows", &sources_obj, &targets_obj, &PyList_Type, &types))
        return NULL;
    Ints sources, targets;
    sources.held = targets.held = 0;
    PyObject *firsts = NULL, *lasts = NULL, *result = NULL;
    if (ints_get(sources_obj, &sources, "sources") < 0 ||
        ints_get(targets_obj, &targets, "targets") < 0)
        goto done;
    Py_ssize_t rows = sources.len;
    if (check_len(targets.len, rows, "targets") < 0 ||
        check_len(PyList_GET_SIZE(types), rows, "relation_types") < 0)
        goto done;
    if ((firsts = PyBytes_FromStringAndSize(NULL, rows * 8)) == NULL ||
        (lasts = PyBytes_FromStringAndSize(NULL, rows * 8)) == NULL)
        goto done;
    int64_t *first = (int64_t *)PyBytes_AS_STRING(firsts);
    int64_t *last = (int64_t *)PyBytes_AS_STRING(lasts);
    if (first_rows(sources.items, targets.items, types, rows, first) < 0) goto done;
    /* A key's last row, noted at its first row's place, then spread to each of its rows. */
    for (Py_ssize_t r = 0; r < rows; r++) last[first[r]] = r;
    for (Py_ssize_t r = 0; r < rows; r++) last[r] = last[first[r]];
    result = PyTuple_Pack(2, firsts, lasts);
done:
    Py_XDECREF(firsts);
    Py_XDECREF(lasts);
    ints_release(&sources);
    ints_release(&targets);
    return result;
}

static PyMethodDef methods[] = {
    {"conflicts_snapshot", conflicts_snapshot, METH_O, conflicts_doc},
    {"pack_occurrences", pack_occurrences, METH_VARARGS, occurrences_doc},
    {"key_rows", key_rows, METH_VARARGS, key_rows_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "projections._prefix_write",
    "The compiled writers of a plain prefix's checkpoints (see projections._prefix_write.c).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__prefix_write(void) { return PyModule_Create(&module_def); }
