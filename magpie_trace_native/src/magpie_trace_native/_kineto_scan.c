/* One-pass reader of a plain-JSON Kineto trace into per-event columns (optional; see columns.py).
 *
 * scan(buf, unescape[, state]) walks one JSON array of events (a piece of a trace's event array) once with a strict tokenizer and, for every event of the
 * event array, writes the fields magpie's ``Event`` struct decodes (ph, cat, name, pid, tid, ts, dur, id,
 * args: External id, correlation, device, stream, Input Dims) into columns, without building a Python
 * object per event: strings and ids are interned per distinct raw token (a Python object is made once per
 * distinct value; with a state list, once per file: the tables and column buffers live from piece to piece).
 * Everything else is skipped after being checked.
 *
 * It returns None ("not handled": the msgspec path then runs and gives today's results and errors) on
 * anything it is not sure to read exactly as msgspec does: invalid JSON or UTF-8, a field of another type,
 * a non-numeric / null / huge number where a number belongs, an escaped key, a duplicate known key,
 * nesting deeper than MAX_DEPTH, a float it cannot parse exactly (strtod range errors).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define MAX_DEPTH 256
#define NO_ID INT64_MIN

typedef struct {
    const unsigned char *p, *end;
    int fail;
    PyObject *unescape; /* callable: bytes of a JSON string literal -> str (used for escapes only) */
    int bare; /* the event array's items without their brackets (a piece of a read-only mapped file): the input's
                 start opens the array and its end closes it, as if '[' and ']' were there */
} Scan;

/* ---- growable column ---- */
typedef struct {
    char *data;
    size_t len, cap, item;
} Col;

static int col_grow(Col *c) {
    size_t ncap = c->cap ? c->cap * 2 : 65536;
    char *nd = realloc(c->data, ncap * c->item);
    if (!nd) return -1;
    c->data = nd;
    c->cap = ncap;
    return 0;
}

/* append one value of the column's item size (a fixed-size copy per type) */
#define COL_PUSH(NAME, T)                                                    \
    static inline int NAME(Col *c, T v) {                                    \
        if (__builtin_expect(c->len == c->cap, 0) && col_grow(c) < 0) return -1; \
        memcpy(c->data + c->len * sizeof(T), &v, sizeof(T));                 \
        c->len++;                                                            \
        return 0;                                                            \
    }
COL_PUSH(push_i32, int32_t)
COL_PUSH(push_i64, int64_t)
COL_PUSH(push_f64, double)
COL_PUSH(push_i8, int8_t)

/* ---- interning of raw tokens (string tokens keep their quotes, so "1" and 1 differ) ----
 * A table holds its own copy of each key, so it can outlive the piece it was filled from: one scan state
 * (see scan()) keeps its tables for every piece of a file, and each distinct value becomes one Python object. */
typedef struct {
    const unsigned char **keys;
    Py_ssize_t *lens;
    int32_t *ids;
    size_t cap, n;
    PyObject *values; /* list: local id -> Python value (made after each pass: see table_values()) */
    size_t last;      /* slot of the last token found: consecutive events often repeat it (cat, ph, pid, tid) */
    /* by local id: the owned token (the same copy as in keys) and how to make its value (kind | has_esc << 2), so
     * the pass itself makes no Python object and runs without the GIL */
    const unsigned char **tok;
    Py_ssize_t *toklen;
    uint8_t *kind;
    size_t tokcap;
} Table;

/* a cheap hash (length, and 8 bytes at each end and the middle): collisions only cost a memcmp */
static inline uint64_t load8(const unsigned char *s) {
    uint64_t v;
    memcpy(&v, s, 8);
    return v;
}

static uint64_t hash_bytes(const unsigned char *s, Py_ssize_t n) {
    uint64_t h = (uint64_t)n * 0x9E3779B97F4A7C15ULL;
    if (n >= 8) {
        h ^= load8(s) * 0xC2B2AE3D27D4EB4FULL;
        h = (h ^ (h >> 29)) * 0x165667B19E3779F9ULL;
        h ^= load8(s + n - 8) * 0xC2B2AE3D27D4EB4FULL;
        h = (h ^ (h >> 32)) * 0x165667B19E3779F9ULL;
        h ^= load8(s + n / 2 - 4) * 0x27D4EB2F165667C5ULL;
    } else {
        for (Py_ssize_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ULL;
    }
    return h ^ (h >> 31);
}

static int table_init(Table *t) {
    t->cap = 1024;
    t->n = 0;
    t->last = 0;
    t->keys = calloc(t->cap, sizeof(*t->keys));
    t->lens = calloc(t->cap, sizeof(*t->lens));
    t->ids = calloc(t->cap, sizeof(*t->ids));
    t->values = PyList_New(0);
    t->tok = NULL, t->toklen = NULL, t->kind = NULL, t->tokcap = 0;
    return (t->keys && t->lens && t->ids && t->values) ? 0 : -1;
}

static void table_free(Table *t) {
    for (size_t i = 0; t->keys && i < t->cap; i++) free((void *)t->keys[i]);
    free(t->keys);
    free(t->lens);
    free(t->ids);
    free(t->tok);
    free(t->toklen);
    free(t->kind);
    Py_XDECREF(t->values);
}

static int table_grow(Table *t) {
    size_t ncap = t->cap * 2;
    const unsigned char **k = calloc(ncap, sizeof(*k));
    Py_ssize_t *l = calloc(ncap, sizeof(*l));
    int32_t *d = calloc(ncap, sizeof(*d));
    if (!k || !l || !d) {
        free(k), free(l), free(d);
        return -1;
    }
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->keys[i]) continue;
        size_t j = hash_bytes(t->keys[i], t->lens[i]) & (ncap - 1);
        while (k[j]) j = (j + 1) & (ncap - 1);
        k[j] = t->keys[i], l[j] = t->lens[i], d[j] = t->ids[i];
    }
    free(t->keys), free(t->lens), free(t->ids);
    t->keys = k, t->lens = l, t->ids = d, t->cap = ncap;
    return 0;
}

/* kind of a token, for making its Python value */
enum { TOK_STR, TOK_INT, TOK_RAW };

static PyObject *make_value(Scan *s, const unsigned char *a, Py_ssize_t n, int kind, int has_esc) {
    if (kind == TOK_RAW) return PyBytes_FromStringAndSize((const char *)a, n);
    if (kind == TOK_INT) {
        char tmp[32];
        memcpy(tmp, a, n);
        tmp[n] = 0;
        return PyLong_FromString(tmp, NULL, 10);
    }
    if (has_esc) return PyObject_CallFunction(s->unescape, "y#", (const char *)a, n);
    return PyUnicode_DecodeUTF8((const char *)a + 1, n - 2, "strict");
}

/* a == b for n bytes; short keys (most names, categories, ids) without a library call */
static inline int same_bytes(const unsigned char *a, const unsigned char *b, Py_ssize_t n) {
    if (n >= 8) {
        if (n <= 16) return load8(a) == load8(b) && load8(a + n - 8) == load8(b + n - 8);
        return memcmp(a, b, n) == 0;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

/* room for one more id in the by-id arrays (no Python: called during a pass) */
static int table_room(Table *t) {
    if (t->n < t->tokcap) return 0;
    size_t ncap = t->tokcap ? t->tokcap * 2 : 1024;
    const unsigned char **k = realloc((void *)t->tok, ncap * sizeof(*k));
    if (k) t->tok = k;
    Py_ssize_t *l = realloc(t->toklen, ncap * sizeof(*l));
    if (l) t->toklen = l;
    uint8_t *d = realloc(t->kind, ncap * sizeof(*d));
    if (d) t->kind = d;
    if (!k || !l || !d) return -1;
    t->tokcap = ncap;
    return 0;
}

/* The Python values of the ids interned since the last call (GIL held, after a pass): values[len(values):n].
 * -1 (error cleared) when one cannot be made: the ids stay pending and the next call tries again. */
static int table_values(Scan *s, Table *t) {
    for (size_t i = (size_t)PyList_GET_SIZE(t->values); i < t->n; i++) {
        PyObject *v = make_value(s, t->tok[i], t->toklen[i], t->kind[i] & 3, t->kind[i] >> 2);
        if (!v || PyList_Append(t->values, v) < 0) {
            Py_XDECREF(v);
            PyErr_Clear();
            return -1;
        }
        Py_DECREF(v);
    }
    return 0;
}

/* local id of a token; -1 with s->fail set on error. No Python object is made here (the GIL is released during a
 * pass): table_values() makes the values of new ids afterwards. */
static int32_t intern(Scan *s, Table *t, const unsigned char *a, Py_ssize_t n, int kind, int has_esc) {
    if (t->keys[t->last] && t->lens[t->last] == n && same_bytes(t->keys[t->last], a, n)) return t->ids[t->last];
    size_t j = hash_bytes(a, n) & (t->cap - 1);
    while (t->keys[j]) {
        if (t->lens[j] == n && same_bytes(t->keys[j], a, n)) return t->ids[t->last = j];
        j = (j + 1) & (t->cap - 1);
    }
    unsigned char *own = malloc(n ? n : 1);
    if (!own || table_room(t) < 0) {
        free(own);
        return s->fail = 1, -1;
    }
    memcpy(own, a, n);
    int32_t id = (int32_t)t->n++;
    t->tok[id] = own, t->toklen[id] = n, t->kind[id] = (uint8_t)(kind | (has_esc ? 4 : 0));
    t->keys[j] = own, t->lens[j] = n, t->ids[j] = id, t->last = j;
    if (t->n * 2 > t->cap && table_grow(t) < 0) {
        s->fail = 1;
        return -1;
    }
    return id;
}

/* ---- tokenizer ---- */
static inline void ws(Scan *s) {
    /* a local pointer: s->p in memory may alias the bytes read (unsigned char), so the compiler would store and
     * reload it per byte. Kineto writes one space after each colon and comma, none elsewhere. */
    const unsigned char *p = s->p, *end = s->end;
    if (p < end && *p > ' ') return;
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
    s->p = p;
}

/* Kineto's separator ", " before the next value (or key): passed over in one step (returns 1), as ws(), ',' and ws()
 * would; 0 (nothing read) for anything else */
static inline int comma_space(Scan *s) {
    const unsigned char *p = s->p;
    if (s->end - p >= 3 && p[0] == ',' && p[1] == ' ' && p[2] > ' ') {
        s->p = p + 2;
        return 1;
    }
    return 0;
}

static inline int hexval(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* the rest of a string from p (the bytes before p are plain ASCII): see string() */
static int string_rest(Scan *s, int *esc, const unsigned char *p) {
    const unsigned char *end = s->end;
    for (;;) {
#ifdef __SSE2__
        /* 16 bytes at a time up to the first quote, backslash, control or non-ASCII byte (signed < 0x20) */
        {
            const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(0x20);
            while (end - p >= 16) {
                __m128i x = _mm_loadu_si128((const __m128i *)p);
                __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, bslash)),
                                         _mm_cmplt_epi8(x, space));
                int bits = _mm_movemask_epi8(m);
                if (bits) {
                    p += __builtin_ctz(bits);
                    break;
                }
                p += 16;
            }
        }
#endif
        while (p < end && *p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\') p++;
        if (p >= end) return s->fail = 1, -1;
        unsigned char c = *p;
        if (c == '"') {
            s->p = p + 1;
            return 0;
        }
        if (c < 0x20) return s->fail = 1, -1;
        if (c == '\\') {
            *esc = 1;
            if (p + 1 >= end) return s->fail = 1, -1;
            unsigned char e = p[1];
            if (e == 'u') {
                if (p + 6 > end) return s->fail = 1, -1;
                int v = 0;
                for (int i = 2; i < 6; i++) {
                    int h = hexval(p[i]);
                    if (h < 0) return s->fail = 1, -1;
                    v = v * 16 + h;
                }
                p += 6;
                if (v >= 0xDC00 && v <= 0xDFFF) return s->fail = 1, -1; /* lone low surrogate */
                if (v >= 0xD800 && v <= 0xDBFF) {                       /* needs a low surrogate next */
                    if (p + 6 > end || p[0] != '\\' || p[1] != 'u') return s->fail = 1, -1;
                    int w = 0;
                    for (int i = 2; i < 6; i++) {
                        int h = hexval(p[i]);
                        if (h < 0) return s->fail = 1, -1;
                        w = w * 16 + h;
                    }
                    if (w < 0xDC00 || w > 0xDFFF) return s->fail = 1, -1;
                    p += 6;
                }
                continue;
            }
            if (!strchr("\"\\/bfnrt", e) || e == 0) return s->fail = 1, -1;
            p += 2;
            continue;
        }
        /* UTF-8 sequence (strict: no overlongs, no surrogates, <= U+10FFFF) */
        int n;
        uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) n = 1, cp = c & 0x1F;
        else if (c >= 0xE0 && c <= 0xEF) n = 2, cp = c & 0x0F;
        else if (c >= 0xF0 && c <= 0xF4) n = 3, cp = c & 0x07;
        else return s->fail = 1, -1;
        if (p + n >= end) return s->fail = 1, -1;
        for (int i = 1; i <= n; i++) {
            if ((p[i] & 0xC0) != 0x80) return s->fail = 1, -1;
            cp = (cp << 6) | (p[i] & 0x3F);
        }
        if ((n == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
            return s->fail = 1, -1;
        p += n + 1;
    }
}

/* a string at s->p (its opening quote); sets *esc when it holds an escape. Checks escapes (lone
 * surrogates fail), control characters and UTF-8. Inline: most strings (keys, names) are plain ASCII
 * shorter than 16 bytes, read by one SSE2 step here; anything else goes on in string_rest(). */
static inline int string(Scan *s, int *esc) {
    const unsigned char *p = s->p + 1;
    *esc = 0;
#ifdef __SSE2__
    if (s->end - p >= 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)p);
        __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('"')), _mm_cmpeq_epi8(x, _mm_set1_epi8('\\'))),
                                 _mm_cmplt_epi8(x, _mm_set1_epi8(0x20)));
        int bits = _mm_movemask_epi8(m);
        if (!bits) return string_rest(s, esc, p + 16);
        p += __builtin_ctz(bits);
        if (*p == '"') {
            s->p = p + 1;
            return 0;
        }
    }
#endif
    return string_rest(s, esc, p);
}

/* Runs of ASCII digits eight bytes at a time (SWAR, little-endian only): one load, a mask and a count instead of a
 * loop whose exit the branch predictor misses once per number (Kineto writes ~8 numbers per event: ids, 13-digit
 * timestamps with 3-6 decimals, durations, tensor shapes). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HAVE_SWAR 1
/* how many of the 8 bytes of w, from the first, are '0'..'9' (a byte past the first other byte may be misjudged:
 * the +6 carries only out of a byte >= 0xFA, which is not a digit) */
static inline int lead_digits(uint64_t w) {
    uint64_t t = ((w & 0xF0F0F0F0F0F0F0F0ULL) ^ 0x3030303030303030ULL) |
                 (((w + 0x0606060606060606ULL) & 0xF0F0F0F0F0F0F0F0ULL) ^ 0x3030303030303030ULL);
    return t ? __builtin_ctzll(t) >> 3 : 8;
}

/* the value of the 8 digits of w (the first is the most significant) */
static inline uint64_t value8(uint64_t w) {
    w -= 0x3030303030303030ULL;
    w = w * 10 + (w >> 8); /* pairs of digits */
    w = (((w & 0x000000FF000000FFULL) * 0x000F424000000064ULL) +
         (((w >> 16) & 0x000000FF000000FFULL) * 0x0000271000000001ULL)) >> 32;
    return w & 0xFFFFFFFFULL;
}

static const uint64_t POW10_U64[] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000};
#endif

/* past the run of digits at p */
static inline const unsigned char *skip_digits(const unsigned char *p, const unsigned char *end) {
#ifdef HAVE_SWAR
    for (; end - p >= 8; p += 8) {
        int n = lead_digits(load8(p));
        if (n < 8) return p + n;
    }
#endif
    while (p < end && *p >= '0' && *p <= '9') p++;
    return p;
}

/* past the run of digits at p, with *d = *d * 10**n + their value (modulo 2**64, as a digit-by-digit loop) */
static inline const unsigned char *read_digits(const unsigned char *p, const unsigned char *end, uint64_t *d) {
    uint64_t v = *d;
#ifdef HAVE_SWAR
    for (; end - p >= 8; p += 8) {
        uint64_t w = load8(p);
        int n = lead_digits(w);
        if (n < 8) {
            if (n) /* the n digits moved to the end of the word, '0' bytes before them */
                v = v * POW10_U64[n] + value8((w << (8 * (8 - n))) | (0x3030303030303030ULL >> (8 * n)));
            *d = v;
            return p + n;
        }
        v = v * 100000000 + value8(w);
    }
#endif
    for (; p < end && *p >= '0' && *p <= '9'; p++) v = v * 10 + (uint64_t)(*p - '0');
    *d = v;
    return p;
}

/* a number at s->p; *is_int when it has no fraction or exponent */
static int number(Scan *s, int *is_int) {
    const unsigned char *p = s->p, *end = s->end;
    *is_int = 1;
    if (p < end && *p == '-') p++;
    if (p >= end) return s->fail = 1, -1;
    if (*p == '0') p++;
    else if (*p >= '1' && *p <= '9') p = skip_digits(p + 1, end);
    else return s->fail = 1, -1;
    if (p < end && *p == '.') {
        *is_int = 0;
        p++;
        if (p >= end || *p < '0' || *p > '9') return s->fail = 1, -1;
        p = skip_digits(p + 1, end);
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        *is_int = 0;
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        if (p >= end || *p < '0' || *p > '9') return s->fail = 1, -1;
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    s->p = p;
    return 0;
}

static int lit(Scan *s, const char *w, size_t n) {
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, w, n) != 0) return s->fail = 1, -1;
    s->p += n;
    return 0;
}

/* one scalar value at s->p (a string, number, true, false or null), checked and passed over */
static int skip_scalar(Scan *s) {
    int x;
    switch (*s->p) {
        case '"': return string(s, &x);
        case 't': return lit(s, "true", 4);
        case 'f': return lit(s, "false", 5);
        case 'n': return lit(s, "null", 4);
        default: return number(s, &x);
    }
}

/* a value at s->p, checked and passed over; a container opened at nesting depth > MAX_DEPTH (the value itself is at
 * ``depth``) fails. One loop with its own stack of the open containers' closing brackets: no call per nested value
 * (Kineto's args hold arrays of arrays of numbers: "Input Dims": [[16, 16, 559, 64], []]). */
static int skip_value(Scan *s, int depth) {
    unsigned char open[MAX_DEPTH + 2];
    int top = 0;
    for (;;) {
        /* a value */
        if (s->p >= s->end) return s->fail = 1, -1;
        unsigned char c = *s->p;
        if (c == '{' || c == '[') {
            if (depth + top > MAX_DEPTH) return s->fail = 1, -1;
            unsigned char close = c == '{' ? '}' : ']';
            s->p++;
            ws(s);
            if (s->p < s->end && *s->p == close) s->p++;
            else {
                open[top++] = close;
                if (close == '}') goto member;
                continue;
            }
        } else if (skip_scalar(s) < 0) return -1;
        /* after a value: the next one of its container, or the containers that close here */
        for (;;) {
            if (top == 0) return 0;
            if (comma_space(s)) {
                if (open[top - 1] == '}') goto member;
                break;
            }
            ws(s);
            if (s->p >= s->end) return s->fail = 1, -1;
            if (*s->p == ',') {
                s->p++;
                ws(s);
                if (open[top - 1] == '}') goto member;
                break;
            }
            if (*s->p != open[top - 1]) return s->fail = 1, -1;
            s->p++;
            top--;
        }
        continue;
    member: /* an object's key and colon; its value follows */
        {
            int esc;
            if (s->p >= s->end || *s->p != '"' || string(s, &esc) < 0) return s->fail = 1, -1;
            ws(s);
            if (s->p >= s->end || *s->p != ':') return s->fail = 1, -1;
            s->p++;
            ws(s);
        }
    }
}

/* ---- typed field readers ---- */
static const double POW10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* Mantissas up to 19 digits (Kineto's microsecond timestamps have 16-17, beyond Clinger's 2**53) in x87 extended
 * precision: d < 2**64 and 10**k (k <= 27, 5**27 < 2**64) are exact there, so d / 10**k is rounded once to 64 bits;
 * rounding that to double gives the correctly rounded double unless the 64-bit result lies exactly halfway between
 * two doubles (its 11 extra bits are 10000000000): then strtod decides. Used only where long double is the x87
 * format and arithmetic runs at its full precision (checked once, on first use: ``extended_ok``). */
#if LDBL_MANT_DIG == 64 && (defined(__x86_64__) || defined(__i386__))
#define HAVE_EXTENDED 1
static int extended_ok = -1;
static const long double POW10L[] = {1e0L,  1e1L,  1e2L,  1e3L,  1e4L,  1e5L,  1e6L,  1e7L,  1e8L,  1e9L,
                                     1e10L, 1e11L, 1e12L, 1e13L, 1e14L, 1e15L, 1e16L, 1e17L, 1e18L, 1e19L,
                                     1e20L, 1e21L, 1e22L, 1e23L, 1e24L, 1e25L, 1e26L, 1e27L};

static void check_extended(void) {
    volatile uint64_t u = (1ULL << 62) + 1;
    volatile long double a = (long double)u;
    volatile long double b = a * 2.0L; /* 2**63 + 2 needs 63 bits: rounded away at double precision */
    volatile long double c = 1e27L;    /* the table's largest power must be exact */
    extended_ok = (uint64_t)b == (1ULL << 63) + 2 && c == (long double)(7450580596923828125ULL) * 134217728.0L;
}

static int wide_float(uint64_t d, int frac, int neg, double *out) {
    if (extended_ok < 0) check_extended();
    if (!extended_ok || frac > 27) return 0;
    long double q = (long double)d / POW10L[frac];
    uint64_t sig;
    memcpy(&sig, &q, 8); /* the x87 format's explicit 64-bit significand */
    if ((sig & 0x7FF) == 0x400) return 0; /* halfway between two doubles after the first rounding: strtod */
    double v = (double)q;
    *out = neg ? -v : v;
    return 1;
}
#else
static int wide_float(uint64_t d, int frac, int neg, double *out) { return 0; }
#endif

/* A number where a float belongs, read and checked in one pass. Clinger's fast path: digits d (< 2**53) and a power
 * of ten 10**k (|k| <= 22) are both exact doubles, so one multiplication or division rounds correctly (the same double
 * strtod and msgspec give); longer mantissas go to wide_float(), exponents and anything else to strtod. */
static int read_float(Scan *s, double *out) {
    const unsigned char *a = s->p, *p = a, *end = s->end;
    int neg = 0, is_int = 1, digits = 0, frac = 0;
    uint64_t d = 0; /* wraps past 19 significant digits: then unused */
    if (p < end && *p == '-') neg = 1, p++;
    if (p >= end) return s->fail = 1, -1;
    if (*p == '0') p++;
    else if (*p >= '1' && *p <= '9') {
        const unsigned char *q = p;
        p = read_digits(p, end, &d);
        digits = (int)(p - q);
    } else return s->fail = 1, -1;
    if (p < end && *p == '.') {
        is_int = 0;
        p++;
        if (p >= end || *p < '0' || *p > '9') return s->fail = 1, -1;
        const unsigned char *q = p;
        if (!d) /* leading zeros of the fraction are not significant (d is 0 only before the first nonzero digit:
                 * it could wrap to 0 only past 19 digits, where digits no longer matters) */
            while (p < end && *p == '0') p++;
        const unsigned char *r = p;
        p = read_digits(p, end, &d);
        digits += (int)(p - r);
        frac = (int)(p - q);
    }
    int has_exp = p < end && (*p == 'e' || *p == 'E');
    if (has_exp) {
        is_int = 0;
        const unsigned char *q = p + 1;
        if (q < end && (*q == '+' || *q == '-')) q++;
        if (q >= end || *q < '0' || *q > '9') return s->fail = 1, -1;
        while (q < end && *q >= '0' && *q <= '9') q++;
        p = q;
    }
    s->p = p;
    if (!has_exp && digits <= 19) {
        int ok = 1;
        if (d <= (1ULL << 53) && frac <= 22) {
            double v = (double)d;
            if (frac) v /= POW10[frac];
            *out = neg ? -v : v;
        } else ok = wide_float(d, frac, neg, out);
        if (ok) {
            if (*out == 0) *out = is_int ? 0.0 : *out; /* the integer -0 is 0; the float -0.0 stays */
            return 0;
        }
    }
    Py_ssize_t n = p - a;
    char tmp[64];
    if (n >= (Py_ssize_t)sizeof(tmp)) return s->fail = 1, -1;
    memcpy(tmp, a, n);
    tmp[n] = 0;
    if (is_int && n > (tmp[0] == '-' ? 20 : 19)) return s->fail = 1, -1; /* beyond int64: msgspec's business */
    errno = 0;
    char *stop;
    double v = strtod(tmp, &stop);
    /* correctly rounded, like msgspec; a range error is fine for a subnormal, not for 0 or an overflow */
    if ((errno != 0 && !(errno == ERANGE && v != 0)) || stop != tmp + n || !isfinite(v)) return s->fail = 1, -1;
    if (is_int && v == 0) v = 0.0; /* the integer -0 is 0 */
    *out = v;
    return 0;
}

/* an integer token at s->p that fits int64, read and checked in one pass (number() then int64_of() would walk it
 * twice): a fraction or an exponent (a float) fails, as do more than 19 digits */
static int read_int(Scan *s, int64_t *out) {
    const unsigned char *p = s->p, *end = s->end;
    int neg = 0;
    if (p < end && *p == '-') neg = 1, p++;
    if (p >= end) return s->fail = 1, -1;
    uint64_t v = 0;
    if (*p == '0') p++;
    else if (*p >= '1' && *p <= '9') {
        const unsigned char *q = p;
        p = read_digits(p, end, &v);
        if (p - q > 19) return s->fail = 1, -1; /* 19 digits cannot overflow uint64 */
    } else return s->fail = 1, -1;
    if (p < end && (*p == '.' || *p == 'e' || *p == 'E')) return s->fail = 1, -1;
    if (v > (uint64_t)INT64_MAX + (uint64_t)neg) return s->fail = 1, -1;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    s->p = p;
    return 0;
}

/* a string field: local id in t */
static int read_str(Scan *s, Table *t, int32_t *out) {
    if (s->p >= s->end || *s->p != '"') return s->fail = 1, -1;
    const unsigned char *a = s->p;
    int esc;
    if (string(s, &esc) < 0) return -1;
    int32_t id = intern(s, t, a, s->p - a, TOK_STR, esc);
    if (id < 0) return -1;
    *out = id;
    return 0;
}

/* an int|str field (pid, tid, device, id): local id in t (null allowed when *out_null given) */
static int read_int_or_str(Scan *s, Table *t, int32_t *out, int allow_null) {
    if (s->p >= s->end) return s->fail = 1, -1;
    if (*s->p == '"') return read_str(s, t, out);
    if (*s->p == 'n' && allow_null) {
        if (lit(s, "null", 4) < 0) return -1;
        *out = -1;
        return 0;
    }
    const unsigned char *a = s->p;
    int64_t unused;
    if (read_int(s, &unused) < 0) return -1;
    int32_t id = intern(s, t, a, s->p - a, TOK_INT, 0);
    if (id < 0) return -1;
    *out = id;
    return 0;
}


typedef struct {
    Col cat, ph, name, pid, tid, ts, dur, id, idint, ext, corr, dev, dims;
    Table tcat, tph, tname, tpid, ttid, tdev, tid_, tdims;
    int32_t absent_ids[5]; /* id + 1 of the struct default of cat, ph, name, pid, tid once interned (0: not yet) */
    int busy;              /* a pass is running on this state (in another thread): set and read with the GIL held */
    struct Red *red;       /* the table builder's reduction (build()), made on first use */
} Out;

/* the id of an absent field's struct default ("" for strings, 0 for pid and tid), interned once per state */
static int32_t absent(Scan *s, Out *o, int field) {
    static const char *tokens[5] = {"\"\"", "\"\"", "\"\"", "0", "0"};
    Table *tables[5] = {&o->tcat, &o->tph, &o->tname, &o->tpid, &o->ttid};
    if (!o->absent_ids[field]) {
        int32_t id = intern(s, tables[field], (const unsigned char *)tokens[field], (Py_ssize_t)strlen(tokens[field]),
                            field < 3 ? TOK_STR : TOK_INT, 0);
        if (id < 0) return -1;
        o->absent_ids[field] = id + 1;
    }
    return o->absent_ids[field] - 1;
}

/* reads an object's key at s->p into (*k, *kn); fails on an escaped key (msgspec would unescape it) */
static int key(Scan *s, const unsigned char **k, Py_ssize_t *kn) {
    if (s->p >= s->end || *s->p != '"') return s->fail = 1, -1;
    const unsigned char *a = s->p;
    int esc;
    if (string(s, &esc) < 0) return -1;
    if (esc) return s->fail = 1, -1;
    *k = a + 1;
    *kn = s->p - a - 2;
    ws(s);
    if (s->p >= s->end || *s->p != ':') return s->fail = 1, -1;
    s->p++;
    ws(s);
    return 0;
}

/* the first n (<= 8) bytes of a word as load8() reads it: a mask for comparing a prefix */
static inline uint64_t lead_mask(size_t n) {
    uint64_t ones = n >= 8 ? ~0ULL : (1ULL << (8 * n)) - 1; /* arithmetic, so that it folds to a constant */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return n >= 8 ? ones : ones << (64 - 8 * n);
#else
    return ones;
#endif
}

/* whether the word w (8 bytes read at some p) starts with the bytes of the string literal LIT (at most 8; the
 * constants fold at compile time) */
#define STARTS_WITH(w, LIT) \
    (((w) & lead_mask(sizeof(LIT) - 1)) == load8((const unsigned char *)(LIT "\0\0\0\0\0\0\0\0")))

/* an event's fields that the walkers read; K_OTHER: any other key */
enum { K_OTHER, K_PH, K_CAT, K_NAME, K_PID, K_TID, K_TS, K_DUR, K_ID, K_ARGS };

static int event_field(const unsigned char *k, Py_ssize_t kn) {
    if (kn == 2) {
        if (k[0] == 'p' && k[1] == 'h') return K_PH;
        if (k[0] == 't' && k[1] == 's') return K_TS;
        if (k[0] == 'i' && k[1] == 'd') return K_ID;
    } else if (kn == 3) {
        if (memcmp(k, "cat", 3) == 0) return K_CAT;
        if (memcmp(k, "pid", 3) == 0) return K_PID;
        if (memcmp(k, "tid", 3) == 0) return K_TID;
        if (memcmp(k, "dur", 3) == 0) return K_DUR;
    } else if (kn == 4) {
        if (memcmp(k, "name", 4) == 0) return K_NAME;
        if (memcmp(k, "args", 4) == 0) return K_ARGS;
    }
    return K_OTHER;
}

/* The key of an event's member at s->p: its field (K_*, -1 on error), s->p past the colon and the spaces after it.
 * Writers spell the known keys `"ph":` (quote, key, quote, colon): that is one masked 8-byte compare, chosen by the
 * key's first letter; a key spelled any other way (spaces before the colon, an escape) and every other key go
 * through key(), which reads the same bytes the same way. */
static int event_key(Scan *s) {
    const unsigned char *p = s->p;
    if (s->end - p >= 8) {
        uint64_t w = load8(p);
        int k = K_OTHER, n = 0;
/* the key spelled LIT (`"ph":`) followed by Kineto's space, or by anything else (n: the bytes matched) */
#define TRY_KEY(LIT, K)                                        \
    if (STARTS_WITH(w, LIT " ")) k = K, n = sizeof(LIT);       \
    else if (STARTS_WITH(w, LIT)) k = K, n = sizeof(LIT) - 1;
        switch (p[1]) {
            case 'p':
                TRY_KEY("\"ph\":", K_PH)
                else TRY_KEY("\"pid\":", K_PID)
                break;
            case 'c':
                TRY_KEY("\"cat\":", K_CAT)
                break;
            case 'n':
                TRY_KEY("\"name\":", K_NAME)
                break;
            case 't':
                TRY_KEY("\"ts\":", K_TS)
                else TRY_KEY("\"tid\":", K_TID)
                break;
            case 'd':
                TRY_KEY("\"dur\":", K_DUR)
                break;
            case 'i':
                TRY_KEY("\"id\":", K_ID)
                break;
            case 'a':
                TRY_KEY("\"args\":", K_ARGS)
                break;
        }
#undef TRY_KEY
        if (k != K_OTHER) {
            s->p = p + n;
            ws(s);
            return k;
        }
    }
    const unsigned char *k;
    Py_ssize_t kn;
    if (key(s, &k, &kn) < 0) return -1;
    return event_field(k, kn);
}

/* the args members scan() reads; A_OTHER: any other key */
enum { A_OTHER, A_EXT, A_CORR, A_DEV, A_STREAM, A_DIMS };

/* the key of an args member at s->p (A_*, -1 on error), s->p past the colon and the spaces after it */
static int args_key(Scan *s) {
    const unsigned char *k;
    Py_ssize_t kn;
    if (key(s, &k, &kn) < 0) return -1;
    if (kn == 11) {
        if (memcmp(k, "External id", 11) == 0) return A_EXT;
        if (memcmp(k, "correlation", 11) == 0) return A_CORR;
    } else if (kn == 6) {
        if (memcmp(k, "device", 6) == 0) return A_DEV;
        if (memcmp(k, "stream", 6) == 0) return A_STREAM;
    } else if (kn == 10 && memcmp(k, "Input Dims", 10) == 0) return A_DIMS;
    return A_OTHER;
}

/* after a member: ',' (returns 1: more) or the closing '}' (returns 0) */
static int next_member(Scan *s) {
    if (comma_space(s)) return 1;
    ws(s);
    if (s->p >= s->end) return s->fail = 1, -1;
    if (*s->p == ',') {
        s->p++;
        ws(s);
        return 1;
    }
    if (*s->p == '}') {
        s->p++;
        return 0;
    }
    return s->fail = 1, -1;
}

static int args(Scan *s, Out *o, int64_t *ext, int64_t *corr, int32_t *dev, int32_t *dims) {
    if (s->p >= s->end || *s->p != '{') return s->fail = 1, -1;
    s->p++;
    ws(s);
    if (s->p < s->end && *s->p == '}') {
        s->p++;
        return 0;
    }
    unsigned seen = 0;
    for (;;) {
        int field = args_key(s);
        if (field < 0) return -1;
        unsigned bit = field == A_OTHER ? 0 : 1u << field;
        switch (field) {
            case A_EXT:
            case A_CORR: {
                int64_t *dst = field == A_EXT ? ext : corr;
                if (s->p < s->end && *s->p == 'n') {
                    if (lit(s, "null", 4) < 0) return -1;
                    *dst = NO_ID; /* an explicit null becomes NONE in the columns: the same int64 */
                } else if (read_int(s, dst) < 0) return -1;
                break;
            }
            case A_DEV:
                if (read_int_or_str(s, &o->tdev, dev, 1) < 0) return -1;
                break;
            case A_STREAM:
                /* type check only: stream is decoded but no column reads it */
                if (s->p < s->end && *s->p == '"') {
                    int esc;
                    if (string(s, &esc) < 0) return -1;
                } else {
                    int32_t unused;
                    if (read_int_or_str(s, &o->tdev, &unused, 1) < 0) return -1;
                }
                break;
            case A_DIMS: {
                const unsigned char *a = s->p;
                if (skip_value(s, 3) < 0) return -1;
                int32_t id = intern(s, &o->tdims, a, s->p - a, TOK_RAW, 0);
                if (id < 0) return -1;
                *dims = id;
                break;
            }
            default:
                if (skip_value(s, 3) < 0) return -1;
        }
        if (bit) {
            if (seen & bit) return s->fail = 1, -1; /* duplicate key: leave it to msgspec */
            seen |= bit;
        }
        int more = next_member(s);
        if (more < 0) return -1;
        if (!more) return 0;
    }
}

static int event(Scan *s, Out *o) {
    if (s->p >= s->end || *s->p != '{') return s->fail = 1, -1;
    s->p++;
    ws(s);
    int32_t cat = -2, ph = -2, name = -2, pid = -2, tid = -2, dev = -1, dims = -1, idv = -1;
    double ts = NAN, dur = NAN;
    int64_t ext = NO_ID, corr = NO_ID, idnum = 0;
    int8_t idint = 0;
    unsigned seen = 0;
    if (s->p < s->end && *s->p == '}') {
        s->p++;
        goto store;
    }
    for (;;) {
        int field = event_key(s);
        if (field < 0) return -1;
        unsigned bit = field == K_OTHER ? 0 : 1u << field;
        switch (field) {
            case K_PH:
                if (read_str(s, &o->tph, &ph) < 0) return -1;
                break;
            case K_CAT:
                if (read_str(s, &o->tcat, &cat) < 0) return -1;
                break;
            case K_NAME:
                if (read_str(s, &o->tname, &name) < 0) return -1;
                break;
            case K_PID:
                if (read_int_or_str(s, &o->tpid, &pid, 0) < 0) return -1;
                break;
            case K_TID:
                if (read_int_or_str(s, &o->ttid, &tid, 0) < 0) return -1;
                break;
            case K_TS:
                if (s->p < s->end && *s->p == 'n') {
                    if (lit(s, "null", 4) < 0) return -1; /* ts: null is None, read as NaN */
                } else if (read_float(s, &ts) < 0) return -1;
                break;
            case K_DUR:
                if (read_float(s, &dur) < 0) return -1;
                break;
            case K_ID:
                if (s->p < s->end && *s->p != '"' && *s->p != 'n') {
                    if (read_int(s, &idnum) < 0) return -1;
                    idint = 1;
                } else if (read_int_or_str(s, &o->tid_, &idv, 1) < 0) return -1;
                break;
            case K_ARGS:
                if (args(s, o, &ext, &corr, &dev, &dims) < 0) return -1;
                break;
            default:
                if (skip_value(s, 2) < 0) return -1;
        }
        if (bit) {
            if (seen & bit) return s->fail = 1, -1;
            seen |= bit;
        }
        int more = next_member(s);
        if (more < 0) return -1;
        if (!more) break;
    }
store:
    if ((cat == -2 && (cat = absent(s, o, 0)) < 0) || (ph == -2 && (ph = absent(s, o, 1)) < 0) ||
        (name == -2 && (name = absent(s, o, 2)) < 0) || (pid == -2 && (pid = absent(s, o, 3)) < 0) ||
        (tid == -2 && (tid = absent(s, o, 4)) < 0))
        return -1;
    if (push_i32(&o->cat, cat) || push_i32(&o->ph, ph) || push_i32(&o->name, name) || push_i32(&o->pid, pid) ||
        push_i32(&o->tid, tid) || push_f64(&o->ts, ts) || push_f64(&o->dur, dur) || push_i64(&o->id, idnum) ||
        push_i8(&o->idint, idint) || push_i64(&o->ext, ext) || push_i64(&o->corr, corr) || push_i32(&o->dev, dev) ||
        push_i32(&o->dims, dims))
        return s->fail = 1, -1;
    return 0;
}

/* a JSON array at s->p ('['): each(s, ctx) reads one item; 0 past its ']' (shared with _kineto_kept.c) */
typedef int (*ItemFn)(Scan *s, void *ctx);

static int array_items(Scan *s, ItemFn each, void *ctx) {
    int bare = s->bare;
    if (!bare) s->p++;
    ws(s);
    if (bare ? s->p >= s->end : s->p < s->end && *s->p == ']') {
        if (!bare) s->p++;
        return 0;
    }
    for (;;) {
        if (each(s, ctx) < 0) return -1;
        ws(s);
        if (s->p >= s->end) {
            if (bare) return 0;
            return s->fail = 1, -1;
        }
        if (*s->p == ',') {
            s->p++;
            ws(s);
            continue;
        }
        if (*s->p == ']' && !bare) {
            s->p++;
            return 0;
        }
        return s->fail = 1, -1;
    }
}

static int event_item(Scan *s, void *o) { return event(s, (Out *)o); }

/* the event array at s->p ('[') */
static int events(Scan *s, Out *o) { return array_items(s, event_item, o); }

static PyObject *col_bytes(Col *c) { return PyBytes_FromStringAndSize(c->data ? c->data : "", c->len * c->item); }

/* ---- scan state: the columns' buffers and the intern tables, kept from piece to piece of one file ---- */
static const char STATE_NAME[] = "magpie_trace_native._kineto_scan.state";

static void red_free(struct Red *r);

static void state_free(Out *o) {
    if (o->red) red_free(o->red);
    Col *all[] = {&o->cat, &o->ph, &o->name, &o->pid, &o->tid, &o->ts, &o->dur, &o->id, &o->idint, &o->ext, &o->corr,
                  &o->dev, &o->dims};
    for (int i = 0; i < 13; i++) free(all[i]->data);
    Table *tables[] = {&o->tcat, &o->tph, &o->tname, &o->tpid, &o->ttid, &o->tdev, &o->tid_, &o->tdims};
    for (int i = 0; i < 8; i++) table_free(tables[i]);
    free(o);
}

static void state_capsule_free(PyObject *cap) {
    Out *o = PyCapsule_GetPointer(cap, STATE_NAME);
    if (o) state_free(o);
}

static Out *state_new(void) {
    Out *o = calloc(1, sizeof(Out));
    if (!o) return NULL;
    Col *cols4[] = {&o->cat, &o->ph, &o->name, &o->pid, &o->tid, &o->dev, &o->dims};
    for (int i = 0; i < 7; i++) cols4[i]->item = 4;
    o->ts.item = o->dur.item = o->id.item = o->ext.item = o->corr.item = 8;
    o->idint.item = 1;
    Table *tables[] = {&o->tcat, &o->tph, &o->tname, &o->tpid, &o->ttid, &o->tdev, &o->tid_, &o->tdims};
    for (int i = 0; i < 8; i++)
        if (table_init(tables[i]) < 0) {
            state_free(o);
            return NULL;
        }
    return o;
}

/* The state in ``holder`` (a list: empty the first time, when a new state is put in it), or a fresh one
 * (*temp set: free it after the piece) when no holder is given. */
static Out *state_of(PyObject *holder, int *temp) {
    *temp = 0;
    if (holder == NULL || holder == Py_None) {
        *temp = 1;
        return state_new();
    }
    if (!PyList_Check(holder)) {
        PyErr_SetString(PyExc_TypeError, "state must be a list");
        return NULL;
    }
    if (PyList_GET_SIZE(holder) > 0) return PyCapsule_GetPointer(PyList_GET_ITEM(holder, 0), STATE_NAME);
    Out *o = state_new();
    if (!o) return NULL;
    PyObject *cap = PyCapsule_New(o, STATE_NAME, state_capsule_free);
    if (!cap) {
        state_free(o);
        return NULL;
    }
    int rc = PyList_Append(holder, cap);
    Py_DECREF(cap);
    return rc < 0 ? NULL : o;
}

#define OUT_TABLES(o) {&o->tcat, &o->tph, &o->tname, &o->tpid, &o->ttid, &o->tdev, &o->tid_, &o->tdims}

/* The pass over one piece; no Python object is touched (the GIL is released meanwhile). */
static void scan_pass(Scan *s, Out *o) {
    if (s->bare) {
        events(s, o); /* past the last item only at the end of the input */
        return;
    }
    ws(s);
    if (s->p < s->end && *s->p == '[') {
        if (events(s, o) == 0) {
            ws(s);
            if (s->p != s->end) s->fail = 1;
        }
    } else s->fail = 1;
}

static PyObject *scan(PyObject *Py_UNUSED(self), PyObject *argsobj) {
    Py_buffer view;
    PyObject *unescape, *holder = NULL;
    if (!PyArg_ParseTuple(argsobj, "y*O|O", &view, &unescape, &holder)) return NULL;
    int temp;
    Out *o = state_of(holder, &temp);
    if (!o) {
        PyBuffer_Release(&view);
        return PyErr_Occurred() ? NULL : PyErr_NoMemory();
    }
    if (o->busy) { /* the state is being read by another thread: not this call's to share */
        PyBuffer_Release(&view);
        Py_RETURN_NONE;
    }
    o->busy = 1;
    Col *all[] = {&o->cat, &o->ph, &o->name, &o->pid, &o->tid, &o->ts, &o->dur, &o->id, &o->idint, &o->ext, &o->corr,
                  &o->dev, &o->dims};
    for (int i = 0; i < 13; i++) all[i]->len = 0; /* the buffers are reused; the tables keep their values */
    Scan s = {(const unsigned char *)view.buf, (const unsigned char *)view.buf + view.len, 0, unescape};
    /* the buffer stays exported (a bytearray cannot be resized meanwhile) and the state is this call's (busy) */
    Py_BEGIN_ALLOW_THREADS
    scan_pass(&s, o);
    Py_END_ALLOW_THREADS
    Table *tables[] = OUT_TABLES(o);
    for (int i = 0; i < 8 && !s.fail; i++)
        if (table_values(&s, tables[i]) < 0) s.fail = 1;
    PyObject *result = NULL;
    if (!s.fail && !PyErr_Occurred()) {
        result = Py_BuildValue(
            "{s:n,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:O}", "n",
            (Py_ssize_t)o->cat.len, "cat", col_bytes(&o->cat), "ph", col_bytes(&o->ph), "name", col_bytes(&o->name),
            "pid", col_bytes(&o->pid), "tid", col_bytes(&o->tid), "ts", col_bytes(&o->ts), "dur", col_bytes(&o->dur),
            "id", col_bytes(&o->id), "idint", col_bytes(&o->idint), "ext", col_bytes(&o->ext), "corr",
            col_bytes(&o->corr), "dev", col_bytes(&o->dev), "dims", col_bytes(&o->dims), "cats", o->tcat.values,
            "phs", o->tph.values, "names", o->tname.values, "pids", o->tpid.values, "tids", o->ttid.values, "devs",
            o->tdev.values, "ids", o->tid_.values, "dimss", o->tdims.values);
    }
    if (result == NULL) {
        PyErr_Clear();
        result = Py_None;
        Py_INCREF(result);
    }
    o->busy = 0;
    if (temp) state_free(o);
    PyBuffer_Release(&view);
    return result;
}

/* ---- the table builder's per-piece reduction: build() (see TableBuilder in columns.py) ----
 *
 * build() runs scan()'s pass and then, in the same GIL-free section, what TableBuilder._reduce does to a piece with
 * numpy: per event the category's group code and selection, the validity of ts/dur (validity.py), t_min/t_max, the
 * skipped events, the platform hint, flow starts, and the kept events' rows appended to per-part row buffers. Rows
 * hold the scanner's local ids of names, tids, Input Dims and devices; the builder's interners (Python dicts) give
 * them their ids. A local id the builder has no id for yet is listed once per piece in the order the numpy builder
 * would intern it, and interned with the GIL held after the pass (only new values: rare after the first pieces); rows
 * are mapped to the builder's ids when exported (export_rows(): at the end of the part, or before a piece decoded by
 * msgspec is appended). A category seen for the first time needs Python (the selection callable): the pass then
 * returns to the GIL, the builder resolves those categories, and the reduction runs in a second GIL-free section.
 *
 * On any failure nothing of the piece is kept (rows truncated, marks cleared) and build() returns None: the piece is
 * then decoded by msgspec and reduced by the numpy builder, which interns the same values in the same order. */

/* validity.py's bounds (the module exports them; a test checks they agree) */
#define MAX_TS_US 1e17
#define MAX_DUR_US 1e12

/* a local category's flags, from TableBuilder._native_cat: group code (0: none), selected, "kernel", "ac2g" (flow
 * starts), cuda_runtime/cuda_driver (the platform hint); CF_NEW: not resolved yet, CF_MARK: listed in this piece */
enum { CF_CODE = 7, CF_SEL = 8, CF_KERNEL = 16, CF_FLOW = 32, CF_CUDART = 64, CF_NEW = 128, CF_MARK = 256 };
/* a local phase's flags: "X" (complete event), "s" (flow start); PF_NEW: not resolved yet */
enum { PF_X = 1, PF_S = 2, PF_NEW = 4 };
enum { G_CPU = 1, G_PY, G_RT, G_ACT, G_ANN };

/* the row columns, in the order of fastpath.py's GROUP_COLUMNS (row_columns() tells Python; a check compares) */
enum {
    R_CPU_TS, R_CPU_DUR, R_CPU_NAME, R_CPU_EXT, R_CPU_DIMS,
    R_PY_TS, R_PY_DUR, R_PY_NAME, R_PY_TID,
    R_RT_TS, R_RT_DUR, R_RT_NAME, R_RT_TID, R_RT_CORR,
    R_ACT_TS, R_ACT_DUR, R_ACT_NAME, R_ACT_DEV, R_ACT_KERNEL, R_ACT_CORR,
    R_ANN_TS, R_ANN_DUR, R_ANN_NAME, R_ANN_CAT,
    R_SEL_TS, R_SEL_DUR, R_SEL_NAME, R_SEL_EXT, R_SEL_CORR,
    R_FLOW_ID, R_FLOW_TS,
    R_N
};
/* how a row column's local ids become the builder's ids when exported */
enum { M_NONE, M_NAME, M_TID, M_DIMS, M_DEV };
typedef struct {
    const char *name;
    int item, map;
} RowSpec;
static const RowSpec ROWS[R_N] = {
    {"cpu.ts", 8, M_NONE},   {"cpu.dur", 8, M_NONE},   {"cpu.name", 4, M_NAME},  {"cpu.ext", 8, M_NONE},
    {"cpu.dims", 4, M_DIMS}, {"py.ts", 8, M_NONE},     {"py.dur", 8, M_NONE},    {"py.name", 4, M_NAME},
    {"py.tid", 4, M_TID},    {"rt.ts", 8, M_NONE},     {"rt.dur", 8, M_NONE},    {"rt.name", 4, M_NAME},
    {"rt.tid", 4, M_TID},    {"rt.corr", 8, M_NONE},   {"act.ts", 8, M_NONE},    {"act.dur", 8, M_NONE},
    {"act.name", 4, M_NAME}, {"act.dev", 4, M_DEV},    {"act.kernel", 1, M_NONE}, {"act.corr", 8, M_NONE},
    {"ann.ts", 8, M_NONE},   {"ann.dur", 8, M_NONE},   {"ann.name", 4, M_NAME},  {"ann.cat", 4, M_NONE},
    {"sel.ts", 8, M_NONE},   {"sel.dur", 8, M_NONE},   {"sel.name", 4, M_NAME},  {"sel.ext", 8, M_NONE},
    {"sel.corr", 8, M_NONE}, {"flow.id", 8, M_NONE},   {"flow.ts", 8, M_NONE},
};

/* local id -> the builder's id (-1: none yet), and which of this piece's lists hold it (bit per list) */
typedef struct {
    int32_t *id;
    uint8_t *mark;
    size_t n, cap;
} IdMap;

/* the lists of local ids to intern after a piece, in the order the numpy builder interns them */
enum { P_NAME, P_TID_PY, P_TID_RT, P_DIMS, P_DEV, P_N };
/* device keys: an args.device local id, or PID_KEY + the pid's local id (an event without args.device is on its pid) */
#define PID_KEY ((int64_t)1 << 31)

typedef struct Red {
    uint16_t *catf; /* by local category id: CF_* flags */
    int32_t *catid; /* by local category id: the builder's id */
    size_t ncat, capcat;
    uint8_t *phf; /* by local phase id: PF_* flags */
    size_t nph, capph;
    size_t unresolved_cats; /* local categories still CF_NEW (left by passes that failed, or new in this one) */
    size_t unresolved_phs;  /* local phases still PF_NEW */
    IdMap name, tid, dims, dev, pid;
    Col pend[P_N];
    Col newcat;     /* local category ids to resolve before the reduction, in order of first appearance */
    Col skc, skr;   /* skipped events: the builder's category id (int32), reason code (int8) */
    Col rows[R_N];
    double lo, hi;  /* the piece's t_min/t_max (+0.0 rule applied) */
    int hint;       /* platform hint found in the piece: 1 rocm, 2 cuda (0: none) */
    Py_ssize_t hint_at;
} Red;

static void red_free(Red *r) {
    IdMap *maps[] = {&r->name, &r->tid, &r->dims, &r->dev, &r->pid};
    for (int i = 0; i < 5; i++) free(maps[i]->id), free(maps[i]->mark);
    for (int i = 0; i < P_N; i++) free(r->pend[i].data);
    for (int i = 0; i < R_N; i++) free(r->rows[i].data);
    free(r->newcat.data), free(r->skc.data), free(r->skr.data);
    free(r->catf), free(r->catid), free(r->phf);
    free(r);
}

static Red *red_new(void) {
    Red *r = calloc(1, sizeof(Red));
    if (!r) return NULL;
    for (int i = 0; i < P_N; i++) r->pend[i].item = i == P_DEV ? 8 : 4;
    for (int i = 0; i < R_N; i++) r->rows[i].item = (size_t)ROWS[i].item;
    r->newcat.item = r->skc.item = 4;
    r->skr.item = 1;
    return r;
}

/* a capacity of at least n (doubling), for arrays grown per piece */
static size_t grown_cap(size_t cap, size_t n) {
    size_t c = cap ? cap : 1024;
    while (c < n) c *= 2;
    return c;
}

/* room for local ids < n; new ones unknown (-1) */
static int idmap_fit(IdMap *m, size_t n) {
    if (n > m->cap) {
        size_t c = grown_cap(m->cap, n);
        int32_t *id = realloc(m->id, c * sizeof(*id));
        if (id) m->id = id;
        uint8_t *mark = realloc(m->mark, c);
        if (mark) m->mark = mark;
        if (!id || !mark) return -1;
        m->cap = c;
    }
    for (size_t i = m->n; i < n; i++) m->id[i] = -1, m->mark[i] = 0;
    if (n > m->n) m->n = n;
    return 0;
}

/* The first characters of a name token (a JSON string literal, quotes included) as ASCII codes: whether the name
 * starts with "hip" (1: rocm) or else "cu" (2: cuda), as _scan_platform's str.startswith. Escapes are decoded (a
 * \\u escape of a non-ASCII character, or any other escape, is a character neither prefix holds). */
static int name_hint(const unsigned char *tok, Py_ssize_t n) {
    const unsigned char *p = tok + 1, *end = tok + n - 1;
    char c[3] = {0, 0, 0};
    for (int k = 0; k < 3 && p < end; k++) {
        if (*p != '\\') {
            c[k] = *p < 0x80 ? (char)*p : 0;
            p++;
        } else if (end - p >= 6 && p[1] == 'u') {
            int v = 0;
            for (int i = 2; i < 6; i++) v = v * 16 + hexval(p[i]); /* the pass checked the hex digits */
            c[k] = v < 0x80 ? (char)v : 0;
            p += 6;
        } else {
            c[k] = 0; /* \" \\ \/ \b \f \n \r \t: none is a letter */
            p += 2;
        }
        if (!c[k]) break;
    }
    if (c[0] == 'h' && c[1] == 'i' && c[2] == 'p') return 1;
    if (c[0] == 'c' && c[1] == 'u') return 2;
    return 0;
}

/* Before the reduction (no GIL): room in the maps for every local id, and whether Python must first resolve new
 * phases or categories this piece uses (1; r->newcat lists those categories), 0 when the reduction can run; -1: no
 * memory. */
static int red_prepare(Out *o, Red *r) {
    IdMap *maps[] = {&r->name, &r->tid, &r->dims, &r->dev, &r->pid};
    Table *tables[] = {&o->tname, &o->ttid, &o->tdims, &o->tdev, &o->tpid};
    for (int i = 0; i < 5; i++)
        if (idmap_fit(maps[i], tables[i]->n) < 0) return -1;
    size_t nc = o->tcat.n, np_ = o->tph.n;
    if (nc > r->capcat) {
        size_t c = grown_cap(r->capcat, nc);
        uint16_t *f = realloc(r->catf, c * sizeof(*f));
        if (f) r->catf = f;
        int32_t *id = realloc(r->catid, c * sizeof(*id));
        if (id) r->catid = id;
        if (!f || !id) return -1;
        r->capcat = c;
    }
    for (; r->ncat < nc; r->ncat++) r->catf[r->ncat] = CF_NEW, r->catid[r->ncat] = -1, r->unresolved_cats++;
    if (np_ > r->capph) {
        size_t c = grown_cap(r->capph, np_);
        uint8_t *f = realloc(r->phf, c);
        if (!f) return -1;
        r->phf = f, r->capph = c;
    }
    for (; r->nph < np_; r->nph++) r->phf[r->nph] = PF_NEW, r->unresolved_phs++;
    int need = r->unresolved_phs > 0; /* new in this pass, or left by one whose values could not be made */
    r->newcat.len = 0;
    if (r->unresolved_cats) {
        /* only the categories this piece's events have, in order of first appearance (the numpy builder interns
         * exactly those: a token left by a failed pass that no event carries must not be interned) */
        const int32_t *cat = (const int32_t *)o->cat.data;
        for (size_t i = 0; i < o->cat.len; i++) {
            uint16_t *f = &r->catf[cat[i]];
            if ((*f & CF_NEW) && !(*f & CF_MARK)) {
                *f |= CF_MARK;
                if (push_i32(&r->newcat, cat[i]) < 0) return -1;
                need = 1;
            }
        }
    }
    return need;
}

/* With the GIL: flags of new phases, and the builder's id and flags of the listed new categories (cat_info(value) ->
 * (id, flags)). -1 (error cleared) on failure; what was resolved stays (those values are in the builder's interner). */
static int red_resolve_cats(Out *o, Red *r, PyObject *cat_info) {
    int rc = 0;
    for (size_t j = 0; r->unresolved_phs && j < r->nph; j++) {
        if (!(r->phf[j] & PF_NEW)) continue;
        PyObject *v = PyList_GET_ITEM(o->tph.values, j);
        r->phf[j] = (uint8_t)((PyUnicode_Check(v) && PyUnicode_CompareWithASCIIString(v, "X") == 0 ? PF_X : 0) |
                              (PyUnicode_Check(v) && PyUnicode_CompareWithASCIIString(v, "s") == 0 ? PF_S : 0));
        r->unresolved_phs--;
    }
    const int32_t *ids = (const int32_t *)r->newcat.data;
    for (size_t k = 0; k < r->newcat.len; k++) {
        int32_t j = ids[k];
        r->catf[j] &= (uint16_t)~CF_MARK;
        if (rc < 0) continue;
        PyObject *got = PyObject_CallOneArg(cat_info, PyList_GET_ITEM(o->tcat.values, j));
        long cid = -1, flags = -1;
        if (got && PyTuple_Check(got) && PyTuple_GET_SIZE(got) == 2) {
            cid = PyLong_AsLong(PyTuple_GET_ITEM(got, 0));
            flags = PyLong_AsLong(PyTuple_GET_ITEM(got, 1));
        }
        Py_XDECREF(got);
        if (cid < 0 || cid > INT32_MAX || flags < 0 || flags >= CF_NEW) {
            PyErr_Clear();
            rc = -1;
            continue;
        }
        r->catid[j] = (int32_t)cid, r->catf[j] = (uint16_t)flags;
        r->unresolved_cats--;
    }
    r->newcat.len = 0;
    return rc;
}

/* local id j of map m first met in list `list` of this piece: listed once */
static inline int pend(Red *r, IdMap *m, int list, int bit, int64_t j, int64_t key) {
    if (m->id[j] >= 0 || (m->mark[j] & bit)) return 0;
    m->mark[j] |= (uint8_t)bit;
    return list == P_DEV ? push_i64(&r->pend[list], key) : push_i32(&r->pend[list], (int32_t)key);
}

/* why an event's ts/dur is not a measurement: validity.reasons() for one event */
static inline int8_t reason(double t, double d) {
    if (isnan(t)) return 1;
    if (!(t >= 0.0 && t <= MAX_TS_US)) return 2;
    if (isnan(d)) return 3;
    if (d < 0.0) return 4;
    if (d > MAX_DUR_US || isinf(d)) return 5;
    return 0;
}

/* The reduction of the piece in o's columns (no GIL): TableBuilder._reduce for one piece. scan_left: how many of
 * its first events may still give the platform hint (0: none). -1 when out of memory (rows half appended: the caller
 * truncates them). */
static int red_piece(Out *o, Red *r, Py_ssize_t scan_left) {
    size_t n = o->cat.len;
    const int32_t *cat = (const int32_t *)o->cat.data, *ph = (const int32_t *)o->ph.data;
    const int32_t *name = (const int32_t *)o->name.data, *pid = (const int32_t *)o->pid.data;
    const int32_t *tid = (const int32_t *)o->tid.data, *dev = (const int32_t *)o->dev.data;
    const int32_t *dims = (const int32_t *)o->dims.data;
    const double *ts = (const double *)o->ts.data, *dur = (const double *)o->dur.data;
    const int64_t *id = (const int64_t *)o->id.data, *ext = (const int64_t *)o->ext.data;
    const int64_t *corr = (const int64_t *)o->corr.data;
    const int8_t *idint = (const int8_t *)o->idint.data;
    Col *R = r->rows;
    double lo = INFINITY, hi = -INFINITY;
    size_t limit = scan_left > 0 ? ((size_t)scan_left < n ? (size_t)scan_left : n) : 0;
    r->hint = 0, r->hint_at = -1;
    for (size_t i = 0; i < n; i++) {
        unsigned f = r->catf[cat[i]], pf = r->phf[ph[i]];
        double t = ts[i], d = dur[i];
        if (i < limit && (f & CF_CUDART) && !r->hint) {
            int h = name_hint(o->tname.tok[name[i]], o->tname.toklen[name[i]]);
            if (h) r->hint = h, r->hint_at = (Py_ssize_t)i;
        }
        int code = (int)(f & CF_CODE), sel = (f & CF_SEL) != 0;
        int timed = t >= 0.0 && t <= MAX_TS_US; /* NaN (absent), negative or absurd: places nothing */
        int measured = timed && d >= 0.0 && d <= MAX_DUR_US;
        if (timed) {
            if (t < lo) lo = t;
            double e = t + (measured ? d : 0.0); /* instant and metadata events have no dur */
            if (e > hi) hi = e;
        }
        if (!(pf & PF_X)) {
            /* flow starts are looked up by (integer) correlation: other ids can never match */
            if (timed && (pf & PF_S) && (f & CF_FLOW) && idint[i] &&
                (push_i64(&R[R_FLOW_ID], id[i]) < 0 || push_f64(&R[R_FLOW_TS], t) < 0))
                return -1;
            continue;
        }
        if (!measured) { /* a complete event without a believable ts and dur (almost never any) */
            if ((code || sel) && (push_i32(&r->skc, r->catid[cat[i]]) < 0 || push_i8(&r->skr, reason(t, d)) < 0))
                return -1;
            continue;
        }
        if (!(code || sel)) continue;
        /* a kept event: every one's name is interned, in event order */
        int32_t nm = name[i];
        if (pend(r, &r->name, P_NAME, 1, nm, nm) < 0) return -1;
        int err = 0;
        switch (code) {
            case G_CPU:
                err = push_f64(&R[R_CPU_TS], t) || push_f64(&R[R_CPU_DUR], d) || push_i32(&R[R_CPU_NAME], nm) ||
                      push_i64(&R[R_CPU_EXT], ext[i]) || push_i32(&R[R_CPU_DIMS], dims[i]) ||
                      (dims[i] >= 0 && pend(r, &r->dims, P_DIMS, 1, dims[i], dims[i]) < 0);
                break;
            case G_PY:
                err = push_f64(&R[R_PY_TS], t) || push_f64(&R[R_PY_DUR], d) || push_i32(&R[R_PY_NAME], nm) ||
                      push_i32(&R[R_PY_TID], tid[i]) || pend(r, &r->tid, P_TID_PY, 1, tid[i], tid[i]) < 0;
                break;
            case G_RT:
                if (corr[i] == NO_ID) break; /* only calls with a correlation id launch anything */
                err = push_f64(&R[R_RT_TS], t) || push_f64(&R[R_RT_DUR], d) || push_i32(&R[R_RT_NAME], nm) ||
                      push_i32(&R[R_RT_TID], tid[i]) || push_i64(&R[R_RT_CORR], corr[i]) ||
                      pend(r, &r->tid, P_TID_RT, 2, tid[i], tid[i]) < 0;
                break;
            case G_ACT: {
                int32_t key = dev[i] >= 0 ? dev[i] : -1 - pid[i];
                err = push_f64(&R[R_ACT_TS], t) || push_f64(&R[R_ACT_DUR], d) || push_i32(&R[R_ACT_NAME], nm) ||
                      push_i32(&R[R_ACT_DEV], key) || push_i8(&R[R_ACT_KERNEL], (f & CF_KERNEL) ? 1 : 0) ||
                      push_i64(&R[R_ACT_CORR], corr[i]) ||
                      (dev[i] >= 0 ? pend(r, &r->dev, P_DEV, 1, dev[i], dev[i])
                                   : pend(r, &r->pid, P_DEV, 1, pid[i], PID_KEY + pid[i])) < 0;
                break;
            }
            case G_ANN:
                err = push_f64(&R[R_ANN_TS], t) || push_f64(&R[R_ANN_DUR], d) || push_i32(&R[R_ANN_NAME], nm) ||
                      push_i32(&R[R_ANN_CAT], r->catid[cat[i]]);
                break;
        }
        if (err) return -1;
        if (sel && (push_f64(&R[R_SEL_TS], t) || push_f64(&R[R_SEL_DUR], d) || push_i32(&R[R_SEL_NAME], nm) ||
                    push_i64(&R[R_SEL_EXT], ext[i]) || push_i64(&R[R_SEL_CORR], corr[i])))
            return -1;
    }
    /* + 0.0: -0.0 and 0.0 are one time, and which of them a piece's min gives depends on where the file is cut */
    r->lo = lo + 0.0, r->hi = hi + 0.0;
    return 0;
}

/* interner[value] as a local id's builder id (the interner adds a value it does not hold); -1 (error set) on failure */
static int32_t interned(PyObject *interner, PyObject *value) {
    PyObject *got = PyObject_GetItem(interner, value);
    if (!got) return -1;
    long v = PyLong_AsLong(got);
    Py_DECREF(got);
    if (v < 0 || v > INT32_MAX) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "interner id out of range");
        return -1;
    }
    return (int32_t)v;
}

/* With the GIL, after the reduction: the builder's ids of the local ids this piece listed, interned list by list in
 * the numpy builder's order (names of kept events; tids of Python functions, then of runtime calls; Input Dims;
 * devices). -1 (error cleared) on failure. Marks are cleared either way. */
static int red_resolve_pending(Out *o, Red *r, PyObject *names, PyObject *tids, PyObject *dims, PyObject *devices) {
    int rc = 0;
    for (int l = 0; l < P_N; l++) {
        Col *c = &r->pend[l];
        for (size_t k = 0; k < c->len; k++) {
            int64_t key = l == P_DEV ? ((int64_t *)c->data)[k] : ((int32_t *)c->data)[k];
            IdMap *m;
            PyObject *values, *interner;
            if (l == P_NAME) m = &r->name, values = o->tname.values, interner = names;
            else if (l == P_TID_PY || l == P_TID_RT) m = &r->tid, values = o->ttid.values, interner = tids;
            else if (l == P_DIMS) m = &r->dims, values = o->tdims.values, interner = dims;
            else if (key < PID_KEY) m = &r->dev, values = o->tdev.values, interner = devices;
            else key -= PID_KEY, m = &r->pid, values = o->tpid.values, interner = devices;
            m->mark[key] = 0;
            if (rc < 0 || m->id[key] >= 0) continue;
            int32_t v = interned(interner, PyList_GET_ITEM(values, key));
            if (v < 0) {
                PyErr_Clear();
                rc = -1;
                continue;
            }
            m->id[key] = v;
        }
        c->len = 0;
    }
    return rc;
}

/* a piece that failed after its rows were (partly) appended: drop them, and its lists (their values, if interned,
 * are interned as the numpy builder, which reads the piece next, interns them first) */
static void red_drop_piece(Red *r, const size_t *rows_before) {
    for (int i = 0; i < R_N; i++) r->rows[i].len = rows_before[i];
    IdMap *lists[P_N] = {&r->name, &r->tid, &r->tid, &r->dims, NULL};
    for (int l = 0; l < P_N; l++) {
        Col *c = &r->pend[l];
        for (size_t k = 0; k < c->len; k++) {
            if (l == P_DEV) {
                int64_t key = ((int64_t *)c->data)[k];
                if (key < PID_KEY) r->dev.mark[key] = 0;
                else r->pid.mark[key - PID_KEY] = 0;
            } else lists[l]->mark[((int32_t *)c->data)[k]] = 0;
        }
        c->len = 0;
    }
    r->skc.len = r->skr.len = 0;
}

/* build(buf, unescape, state, ctx, scan_left[, bare]): read one piece and reduce it into the part's rows (see above).
 * ctx: (cat_info, names, tids, dims, devices) of the builder. bare: buf holds the array's items without the brackets
 * (read-only bytes of a mapped file, which cannot be given a '[' and a ']' in place). Returns (events, t_min, t_max, hint, hint_at, skipped
 * category ids or None, their reason codes or None), or None when not handled (nothing of the piece kept). */
static PyObject *build(PyObject *Py_UNUSED(self), PyObject *argsobj) {
    Py_buffer view;
    PyObject *unescape, *holder, *cat_info, *names, *tids, *dims, *devices;
    Py_ssize_t scan_left;
    int bare = 0;
    if (!PyArg_ParseTuple(argsobj, "y*OO(OOOOO)n|p", &view, &unescape, &holder, &cat_info, &names, &tids, &dims,
                          &devices, &scan_left, &bare))
        return NULL;
    int temp;
    Out *o = holder == Py_None ? NULL : state_of(holder, &temp);
    if (!o || o->busy) {
        PyBuffer_Release(&view);
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NONE; /* no state given, or it is being read by another thread */
    }
    if (!o->red && !(o->red = red_new())) { /* no memory: msgspec reads the piece (and likely fails cleanly) */
        PyBuffer_Release(&view);
        Py_RETURN_NONE;
    }
    Red *r = o->red;
    o->busy = 1;
    Col *all[] = {&o->cat, &o->ph, &o->name, &o->pid, &o->tid, &o->ts, &o->dur, &o->id, &o->idint, &o->ext, &o->corr,
                  &o->dev, &o->dims};
    for (int i = 0; i < 13; i++) all[i]->len = 0;
    size_t rows_before[R_N];
    for (int i = 0; i < R_N; i++) rows_before[i] = r->rows[i].len;
    r->skc.len = r->skr.len = 0;
    Scan s = {(const unsigned char *)view.buf, (const unsigned char *)view.buf + view.len, 0, unescape, bare};
    int need = 0, reduced = 0;
    Py_BEGIN_ALLOW_THREADS
    scan_pass(&s, o);
    if (!s.fail) {
        need = red_prepare(o, r);
        if (need < 0) s.fail = 1;
        else if (!need) reduced = red_piece(o, r, scan_left) == 0 ? 1 : -1;
    }
    Py_END_ALLOW_THREADS
    Table *tables[] = OUT_TABLES(o);
    for (int i = 0; i < 8 && !s.fail; i++)
        if (table_values(&s, tables[i]) < 0) s.fail = 1;
    if (s.fail && reduced) reduced = -1; /* reduced, but the new values could not be made: drop the piece */
    if (!s.fail && need) { /* new phases or categories: resolved by Python, then the reduction without the GIL */
        if (red_resolve_cats(o, r, cat_info) < 0) s.fail = 1;
        else {
            Py_BEGIN_ALLOW_THREADS
            reduced = red_piece(o, r, scan_left) == 0 ? 1 : -1;
            Py_END_ALLOW_THREADS
        }
    } else if (need) { /* the listed categories stay new: unmark them */
        for (size_t k = 0; k < r->newcat.len; k++) r->catf[((int32_t *)r->newcat.data)[k]] &= (uint16_t)~CF_MARK;
        r->newcat.len = 0;
    }
    if (reduced < 0 || (reduced > 0 && red_resolve_pending(o, r, names, tids, dims, devices) < 0)) reduced = -1;
    PyObject *result = NULL;
    if (reduced > 0) {
        PyObject *skc = Py_None, *skr = Py_None;
        if (r->skc.len) skc = col_bytes(&r->skc), skr = col_bytes(&r->skr);
        else Py_INCREF(skc), Py_INCREF(skr);
        if (skc && skr)
            result = Py_BuildValue("(nddinNN)", (Py_ssize_t)o->cat.len, r->lo, r->hi, r->hint, r->hint_at, skc, skr);
        else Py_XDECREF(skc), Py_XDECREF(skr);
    }
    if (result == NULL) {
        if (reduced) red_drop_piece(r, rows_before);
        PyErr_Clear();
        result = Py_None;
        Py_INCREF(result);
    }
    o->busy = 0;
    PyBuffer_Release(&view);
    return result;
}

/* the reduction of a state list (build()'s third argument); NULL with an error set */
static Red *red_of(PyObject *holder) {
    if (!PyList_Check(holder) || PyList_GET_SIZE(holder) == 0) {
        PyErr_SetString(PyExc_ValueError, "no build state");
        return NULL;
    }
    Out *o = PyCapsule_GetPointer(PyList_GET_ITEM(holder, 0), STATE_NAME);
    if (!o) return NULL;
    if (o->busy) {
        PyErr_SetString(PyExc_ValueError, "build state in use");
        return NULL;
    }
    if (!o->red && !(o->red = red_new())) PyErr_NoMemory(); /* no piece was reduced: no rows */
    return o->red;
}

/* row_counts(state): how many rows per row column (row_columns() order) */
static PyObject *row_counts(PyObject *Py_UNUSED(self), PyObject *holder) {
    Red *r = red_of(holder);
    if (!r) return NULL;
    PyObject *t = PyTuple_New(R_N);
    for (int i = 0; t && i < R_N; i++) {
        PyObject *v = PyLong_FromSize_t(r->rows[i].len);
        if (!v) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, v);
    }
    return t;
}

/* export_rows(state, outs[, remaps]): the rows written into outs (one writable buffer per row column, of row_counts()
 * items each) with the builder's ids, and the row buffers emptied for the next pieces. remaps (merging split parts
 * straight into the merged columns): per row column None, or for a 4-byte id column an int32 buffer mapping the
 * builder's ids to the merged table's (negative ids, dims' -1, stay) */
static PyObject *export_rows(PyObject *Py_UNUSED(self), PyObject *argsobj) {
    PyObject *holder, *outs, *remaps = Py_None;
    if (!PyArg_ParseTuple(argsobj, "OO|O", &holder, &outs, &remaps)) return NULL;
    Red *r = red_of(holder);
    if (!r) return NULL;
    if (!PyList_Check(outs) || PyList_GET_SIZE(outs) != R_N ||
        (remaps != Py_None && (!PyList_Check(remaps) || PyList_GET_SIZE(remaps) != R_N))) {
        PyErr_SetString(PyExc_ValueError, "one buffer per row column expected");
        return NULL;
    }
    Py_buffer views[R_N], maps[R_N];
    int got = 0, ok = 1, mapped = 0, bad = 0;
    for (; mapped < R_N && remaps != Py_None; mapped++) {
        PyObject *m = PyList_GET_ITEM(remaps, mapped);
        if (m == Py_None) {
            maps[mapped].buf = NULL;
            maps[mapped].obj = NULL;
            continue;
        }
        if (ROWS[mapped].item != 4 || PyObject_GetBuffer(m, &maps[mapped], PyBUF_C_CONTIGUOUS) < 0) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a remap for a column without ids");
            ok = 0;
            break;
        }
    }
    for (; got < R_N && ok; got++) {
        if (PyObject_GetBuffer(PyList_GET_ITEM(outs, got), &views[got], PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) {
            ok = 0;
            break;
        }
        if ((size_t)views[got].len != r->rows[got].len * r->rows[got].item) {
            PyBuffer_Release(&views[got]);
            PyErr_SetString(PyExc_ValueError, "row buffer of the wrong size");
            ok = 0;
            break;
        }
    }
    if (ok) {
        Py_BEGIN_ALLOW_THREADS
        for (int c = 0; c < R_N; c++) {
            Col *src = &r->rows[c];
            int32_t *out = views[c].buf;
            const int32_t *in = (const int32_t *)src->data;
            switch (ROWS[c].map) {
                case M_NAME:
                    for (size_t k = 0; k < src->len; k++) out[k] = r->name.id[in[k]];
                    break;
                case M_TID:
                    for (size_t k = 0; k < src->len; k++) out[k] = r->tid.id[in[k]];
                    break;
                case M_DIMS: /* -1: no Input Dims */
                    for (size_t k = 0; k < src->len; k++) out[k] = in[k] < 0 ? -1 : r->dims.id[in[k]];
                    break;
                case M_DEV:
                    for (size_t k = 0; k < src->len; k++) out[k] = in[k] >= 0 ? r->dev.id[in[k]] : r->pid.id[-1 - in[k]];
                    break;
                default:
                    if (src->len) memcpy(views[c].buf, src->data, src->len * src->item);
            }
            if (remaps != Py_None && maps[c].buf) { /* builder id -> merged id */
                const int32_t *to = maps[c].buf;
                size_t nmap = (size_t)maps[c].len / 4;
                for (size_t k = 0; k < src->len; k++)
                    if (out[k] >= 0) {
                        if ((size_t)out[k] < nmap) out[k] = to[out[k]];
                        else bad = 1;
                    }
            }
            src->len = 0;
        }
        Py_END_ALLOW_THREADS
    }
    for (int i = 0; i < got; i++) PyBuffer_Release(&views[i]);
    for (int i = 0; i < mapped; i++)
        if (maps[i].obj) PyBuffer_Release(&maps[i]);
    if (!ok) return NULL;
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "an id beyond its remap");
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *row_columns(PyObject *Py_UNUSED(self), PyObject *Py_UNUSED(unused)) {
    PyObject *t = PyTuple_New(R_N);
    for (int i = 0; t && i < R_N; i++) {
        PyObject *v = PyUnicode_FromString(ROWS[i].name);
        if (!v) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, v);
    }
    return t;
}

/* ---- mapped files: a SIGBUS guard ----
 * A piece cut from a read-only mapping of the file (columns.py) is read in place, without a copy. If the file shrinks
 * meanwhile (rewritten by its profiler), touching a page past its new end raises SIGBUS, which would kill the process.
 * guard(buf) registers a mapping: a fault inside it maps a page of zeros there (reads go on, whatever they make of
 * zeros) and marks the slot; unguard(slot) says whether that happened, and the caller then drops what it read (falls
 * back to reading the file whole). Faults elsewhere go to the handler installed before (or the default action). */
#ifdef __linux__
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>
#endif
#if defined(__linux__) && defined(SA_SIGINFO)
#define HAVE_BUS_GUARD 1
#define GUARD_SLOTS 32
static struct {
    volatile uintptr_t lo, hi;
    volatile sig_atomic_t hit;
} guards[GUARD_SLOTS];
static struct sigaction prev_bus;
static uintptr_t page_size;

static void on_bus(int sig, siginfo_t *info, void *uctx) {
    uintptr_t a = (uintptr_t)info->si_addr;
    for (int i = 0; i < GUARD_SLOTS; i++) {
        uintptr_t lo = guards[i].lo, hi = guards[i].hi;
        if (lo && a >= lo && a < hi) {
            void *page = (void *)(a & ~(page_size - 1));
            if (mmap(page, page_size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED) {
                guards[i].hit = 1;
                return; /* the read is retried, on zeros */
            }
        }
    }
    if ((prev_bus.sa_flags & SA_SIGINFO) && prev_bus.sa_sigaction) {
        prev_bus.sa_sigaction(sig, info, uctx);
        return;
    }
    if (prev_bus.sa_handler != SIG_DFL && prev_bus.sa_handler != SIG_IGN) {
        prev_bus.sa_handler(sig);
        return;
    }
    signal(SIGBUS, SIG_DFL); /* the fault repeats on return, now with the default action */
}

/* our handler in place (again, if someone replaced it since): 0, or -1 */
static int bus_handler_installed(void) {
    struct sigaction cur;
    if (sigaction(SIGBUS, NULL, &cur) < 0) return -1;
    if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_bus) return 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_bus;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    if (!page_size) page_size = (uintptr_t)sysconf(_SC_PAGESIZE);
    return sigaction(SIGBUS, &sa, &prev_bus);
}
#endif

/* guard(buf) -> slot (>= 0), or -1 where no guard can be set (the caller then copies instead of mapping) */
static PyObject *guard(PyObject *Py_UNUSED(self), PyObject *obj) {
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) < 0) return NULL;
    long slot = -1;
#ifdef HAVE_BUS_GUARD
    if (view.len > 0 && bus_handler_installed() == 0) /* slots are taken and freed holding the GIL */
        for (int i = 0; i < GUARD_SLOTS; i++)
            if (!guards[i].lo) {
                guards[i].hit = 0;
                guards[i].hi = (uintptr_t)view.buf + (uintptr_t)view.len;
                guards[i].lo = (uintptr_t)view.buf;
                slot = i;
                break;
            }
#endif
    PyBuffer_Release(&view);
    return PyLong_FromLong(slot);
}

/* unguard(slot) -> whether a fault was met in the mapping (the file shrank while it was read) */
static PyObject *unguard(PyObject *Py_UNUSED(self), PyObject *arg) {
    long slot = PyLong_AsLong(arg);
    if (slot == -1 && PyErr_Occurred()) return NULL;
    int hit = 0;
#ifdef HAVE_BUS_GUARD
    if (slot >= 0 && slot < GUARD_SLOTS) {
        hit = guards[slot].hit;
        guards[slot].lo = 0;
        guards[slot].hi = 0;
    }
#endif
    return PyBool_FromLong(hit);
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(buf, unescape, state=None) -> dict of columns, or None when not handled. state: a list, empty at "
     "first, that keeps the intern tables (the value lists grow) and buffers from piece to piece of one file"},
    {"build", build, METH_VARARGS,
     "build(buf, unescape, state, (cat_info, names, tids, dims, devices), scan_left) -> (events, t_min, t_max, hint, "
     "hint_at, skipped category ids, reasons) or None: one piece read and reduced into state's rows"},
    {"row_counts", row_counts, METH_O, "row_counts(state) -> rows per row column"},
    {"export_rows", export_rows, METH_VARARGS, "export_rows(state, buffers): the rows with the builder's ids"},
    {"guard", guard, METH_O, "guard(mapping) -> slot or -1: a fault in the mapping reads zeros, not SIGBUS"},
    {"unguard", unguard, METH_O, "unguard(slot) -> whether the mapping faulted (the file shrank while read)"},
    {"row_columns", row_columns, METH_NOARGS, "row_columns() -> 'group.column' of each row column"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kineto_scan", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__kineto_scan(void) {
#ifdef HAVE_EXTENDED
    check_extended(); /* once, before any pass: passes run on several threads at once */
#endif
    PyObject *m = PyModule_Create(&module);
    if (m && (PyModule_AddObject(m, "MAX_TS_US", PyFloat_FromDouble(MAX_TS_US)) < 0 ||
              PyModule_AddObject(m, "MAX_DUR_US", PyFloat_FromDouble(MAX_DUR_US)) < 0))
        Py_CLEAR(m);
    return m;
}
