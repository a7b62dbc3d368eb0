/* The byte-trigram buckets of texts, for the search filters (the live index's segments and
 * the graph image's filter matrix).
 *
 * A text's words (split at ASCII whitespace, NUL and U+0001) each padded with two spaces on
 * either side; every byte trigram of a padded word, as the number b0 | b1 << 8 | b2 << 16,
 * modulo the bucket count, is a bucket of the text. A set of texts with no word at all has
 * the bucket of three spaces. In Python (projections.trigrams) that takes a set of the words,
 * a join and four array reads per segment; here it is one pass over the UTF-8 bytes. The
 * pure-Python twins are projections.trigrams.text_buckets and filter_rows, with the same
 * results (tests/property/test_trigrams.py runs both). Texts are encoded as Python encodes
 * them with "surrogatepass" (lone surrogates are valid in JSON strings).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define THREE_SPACES 0x202020u

static inline int is_break(unsigned char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == 0x0b || c == 0x0c ||
           c == 0x00 || c == 0x01;
}

/* Marks every bucket of the words of `s` (n bytes): base[bucket * stride] |= bit. Returns
 * whether there was a word. */
static int mark_words(const unsigned char *s, Py_ssize_t n, uint32_t buckets, uint8_t *base,
                      Py_ssize_t stride, uint8_t bit) {
    int any = 0;
    Py_ssize_t i = 0;
    while (i < n) {
        while (i < n && is_break(s[i])) i++;
        if (i >= n) break;
        const unsigned char *w = s + i;
        Py_ssize_t start = i;
        while (i < n && !is_break(s[i])) i++;
        Py_ssize_t length = i - start;
        any = 1;
        /* The padded word's windows, each starting at j (word coordinates, -2 to length-1). */
        for (Py_ssize_t j = -2; j < length; j++) {
            uint32_t b0 = j >= 0 ? w[j] : ' ';
            uint32_t b1 = j + 1 >= 0 && j + 1 < length ? w[j + 1] : ' ';
            uint32_t b2 = j + 2 < length ? w[j + 2] : ' ';
            uint32_t trigram = b0 | b1 << 8 | b2 << 16;
            base[(Py_ssize_t)(trigram % buckets) * stride] |= bit;
        }
    }
    return any;
}

/* Marks the buckets of one text (a str); -1 with an exception set, else whether it had a
 * word. ASCII text is read in place; other text is encoded (never cached in the str: the
 * search index's segment texts live long, and a cached UTF-8 copy would double them). */
static int mark_text(PyObject *text, uint32_t buckets, uint8_t *base, Py_ssize_t stride,
                     uint8_t bit) {
    if (!PyUnicode_Check(text)) {
        PyErr_Format(PyExc_TypeError, "texts must be str, not %.100s", Py_TYPE(text)->tp_name);
        return -1;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(text) < 0) return -1;
#endif
    if (PyUnicode_IS_ASCII(text)) {
        return mark_words((const unsigned char *)PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text),
                          buckets, base, stride, bit);
    }
    PyObject *encoded = PyUnicode_AsEncodedString(text, "utf-8", "surrogatepass");
    if (encoded == NULL) return -1;
    int any = mark_words((const unsigned char *)PyBytes_AS_STRING(encoded),
                         PyBytes_GET_SIZE(encoded), buckets, base, stride, bit);
    Py_DECREF(encoded);
    return any;
}

static int checked_buckets(Py_ssize_t buckets) {
    if (buckets <= 0 || buckets > 0x7FFFFFFF) {
        PyErr_SetString(PyExc_ValueError, "buckets must be between 1 and 2**31 - 1");
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(text_buckets_doc,
             "text_buckets(texts, buckets)\n--\n\n"
             "The buckets (a set of int) of the byte trigrams of the padded words of `texts`\n"
             "(a list of str); {three spaces' bucket} when they hold no word.");

static PyObject *text_buckets(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *texts;
    Py_ssize_t buckets;
    if (!PyArg_ParseTuple(args, "On:text_buckets", &texts, &buckets)) return NULL;
    if (checked_buckets(buckets) < 0) return NULL;
    PyObject *listed = PySequence_Fast(texts, "texts must be a sequence of str");
    if (listed == NULL) return NULL;
    uint8_t *marks = calloc((size_t)buckets, 1);
    PyObject *found = NULL;
    if (marks == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    int any = 0;
    Py_ssize_t size = PySequence_Fast_GET_SIZE(listed);
    PyObject **items = PySequence_Fast_ITEMS(listed);
    for (Py_ssize_t i = 0; i < size; i++) {
        int had = mark_text(items[i], (uint32_t)buckets, marks, 1, 1);
        if (had < 0) goto done;
        any |= had;
    }
    if (!any) marks[THREE_SPACES % (uint32_t)buckets] = 1;
    found = PySet_New(NULL);
    if (found == NULL) goto done;
    for (Py_ssize_t b = 0; b < buckets; b++) {
        if (!marks[b]) continue;
        PyObject *bucket = PyLong_FromSsize_t(b);
        if (bucket == NULL || PySet_Add(found, bucket) < 0) {
            Py_XDECREF(bucket);
            Py_CLEAR(found);
            goto done;
        }
        Py_DECREF(bucket);
    }
done:
    free(marks);
    Py_DECREF(listed);
    return found;
}

PyDoc_STRVAR(filter_rows_doc,
             "filter_rows(texts, segment_size, buckets)\n--\n\n"
             "The trigram filter of `texts` (a list of str) cut into segments of\n"
             "`segment_size`: per bucket, a row of one bit per segment (segment k at byte k // 8,\n"
             "bit k % 8), set where a text of that segment has a trigram in that bucket.");

static PyObject *filter_rows(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *texts;
    Py_ssize_t segment_size, buckets;
    if (!PyArg_ParseTuple(args, "Onn:filter_rows", &texts, &segment_size, &buckets)) return NULL;
    if (checked_buckets(buckets) < 0) return NULL;
    if (segment_size <= 0) {
        PyErr_SetString(PyExc_ValueError, "segment_size must be positive");
        return NULL;
    }
    PyObject *listed = PySequence_Fast(texts, "texts must be a sequence of str");
    if (listed == NULL) return NULL;
    Py_ssize_t size = PySequence_Fast_GET_SIZE(listed);
    PyObject **items = PySequence_Fast_ITEMS(listed);
    /* Written so that no segment size, however large, overflows. */
    Py_ssize_t segments = size / segment_size + (size % segment_size != 0);
    Py_ssize_t row_bytes = (segments + 7) / 8;
    if (row_bytes > 0 && buckets > PY_SSIZE_T_MAX / row_bytes) {
        Py_DECREF(listed);
        return PyErr_NoMemory();
    }
    PyObject *matrix = PyBytes_FromStringAndSize(NULL, buckets * row_bytes);
    if (matrix == NULL) {
        Py_DECREF(listed);
        return NULL;
    }
    uint8_t *rows = (uint8_t *)PyBytes_AS_STRING(matrix);
    memset(rows, 0, (size_t)(buckets * row_bytes));
    for (Py_ssize_t k = 0; k < segments; k++) {
        uint8_t *base = rows + k / 8;
        uint8_t bit = (uint8_t)(1u << (k % 8));
        Py_ssize_t start = k * segment_size; /* below size: k < segments */
        Py_ssize_t end = size - start > segment_size ? start + segment_size : size;
        int any = 0;
        for (Py_ssize_t i = start; i < end; i++) {
            int had = mark_text(items[i], (uint32_t)buckets, base, row_bytes, bit);
            if (had < 0) {
                Py_DECREF(matrix);
                Py_DECREF(listed);
                return NULL;
            }
            any |= had;
        }
        if (!any) base[(Py_ssize_t)(THREE_SPACES % (uint32_t)buckets) * row_bytes] |= bit;
    }
    Py_DECREF(listed);
    return matrix;
}

static PyMethodDef methods[] = {
    {"text_buckets", text_buckets, METH_VARARGS, text_buckets_doc},
    {"filter_rows", filter_rows, METH_VARARGS, filter_rows_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "projections._trigrams",
    "Byte-trigram buckets of texts (see projections/_trigrams.c).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__trigrams(void) { return PyModule_Create(&module_def); }
