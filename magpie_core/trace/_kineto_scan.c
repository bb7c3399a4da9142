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
    int64_t flowid_scratch;
    int32_t absent_ids[5]; /* id + 1 of the struct default of cat, ph, name, pid, tid once interned (0: not yet) */
    int busy;              /* a pass is running on this state (in another thread): set and read with the GIL held */
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
    s->p++;
    ws(s);
    if (s->p < s->end && *s->p == ']') {
        s->p++;
        return 0;
    }
    for (;;) {
        if (each(s, ctx) < 0) return -1;
        ws(s);
        if (s->p >= s->end) return s->fail = 1, -1;
        if (*s->p == ',') {
            s->p++;
            ws(s);
            continue;
        }
        if (*s->p == ']') {
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
static const char STATE_NAME[] = "magpie_core.trace._kineto_scan.state";

static void state_free(Out *o) {
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

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(buf, unescape, state=None) -> dict of columns, or None when not handled. state: a list, empty at "
     "first, that keeps the intern tables (the value lists grow) and buffers from piece to piece of one file"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kineto_scan", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__kineto_scan(void) {
#ifdef HAVE_EXTENDED
    check_extended(); /* once, before any pass: passes run on several threads at once */
#endif
    return PyModule_Create(&module);
}
