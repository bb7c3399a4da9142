/* Reader of the events a sink keeps, straight into the sink's own struct objects (optional; see kept_reader.py).
 *
 * _kineto_scan.c reads every event of a piece into columns for the core's event table. Some analyses instead
 * keep a few categories of complete events as objects (a plugin's msgspec structs) and drop the rest: for them,
 * read(buf, unescape) walks one JSON array of events with the same strict tokenizer (included below, so both
 * extensions share one tokenizer), type-checks every event's fields as the sink's msgspec decoder would, and
 * builds objects only for the kept ones: Ev(ph, cat, name, tid, ts, dur, args) with args an Args(*values) of the
 * configured keys. Strings, thread ids and raw argument texts are interned across pieces (one Python object per
 * distinct value per reader), and so are args objects without an integer value (the sink must not change them);
 * timestamps of the kept events also come back as columns per bucket.
 *
 * As for scan(): anything it is not sure to read exactly as msgspec does (invalid JSON or UTF-8, a field of another
 * type, an integer outside int64, an escaped key, a duplicate known key, nesting deeper
 * than MAX_DEPTH, a float strtod cannot read exactly) returns None, and the caller decodes that piece with msgspec.
 */
#include "_kineto_scan.c"

#define MAX_ARGS 16
#define MAX_BUCKETS 8

/* ---- interning across pieces: the table owns a copy of each key (the pieces' buffer is reused) ---- */
typedef struct {
    unsigned char *key;
    Py_ssize_t n;
    PyObject *value;
    int aux; /* for string tokens: the bucket of that category (-1: not kept) */
} Entry;

typedef struct {
    Entry *e;
    size_t cap, n;
} Intern;

static int intern_init(Intern *t) {
    t->cap = 4096;
    t->n = 0;
    t->e = calloc(t->cap, sizeof(Entry));
    return t->e ? 0 : -1;
}

static void intern_free(Intern *t) {
    if (!t->e) return;
    for (size_t i = 0; i < t->cap; i++)
        if (t->e[i].key) {
            free(t->e[i].key);
            Py_DECREF(t->e[i].value);
        }
    free(t->e);
    t->e = NULL;
}

static int intern_grow(Intern *t) {
    size_t ncap = t->cap * 2;
    Entry *ne = calloc(ncap, sizeof(Entry));
    if (!ne) return -1;
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->e[i].key) continue;
        size_t j = hash_bytes(t->e[i].key, t->e[i].n) & (ncap - 1);
        while (ne[j].key) j = (j + 1) & (ncap - 1);
        ne[j] = t->e[i];
    }
    free(t->e);
    t->e = ne;
    t->cap = ncap;
    return 0;
}

typedef struct {
    PyObject *lists[MAX_BUCKETS];
    Col ts[MAX_BUCKETS], dur[MAX_BUCKETS], tid[MAX_BUCKETS];
    int tid_str[MAX_BUCKETS]; /* a kept event of this bucket has a string thread id */
    Py_ssize_t seen;
} Kept; /* one piece's output; the columns' memory is reused from piece to piece */

typedef struct {
    PyObject_HEAD
    PyObject *ev_type, *args_type, *categories, *raw_default, *empty, *zero;
    int nargs, nbuckets;
    const char *arg_keys[MAX_ARGS];
    Py_ssize_t arg_lens[MAX_ARGS];
    int arg_kinds[MAX_ARGS]; /* ARG_INT, ARG_STR, ARG_RAW */
    int need_arg[MAX_BUCKETS]; /* an event of this bucket is kept only when this argument is present (-1: always) */
    PyObject *keys_ref;        /* keeps the key bytes alive */
    PyObject *skip_ref;        /* skip keys: bytes objects, see skipped_piece */
    int nskip;
    Intern strs, ints, raws, argsets;
    Kept out;
} Reader;

enum { ARG_INT, ARG_STR, ARG_RAW };

/* the slot of key a..a+n in t: its entry, or the empty slot where it goes */
static Entry *slot_of(Intern *t, const unsigned char *a, Py_ssize_t n) {
    size_t j = hash_bytes(a, n) & (t->cap - 1);
    while (t->e[j].key) {
        if (t->e[j].n == n && memcmp(t->e[j].key, a, n) == 0) return &t->e[j];
        j = (j + 1) & (t->cap - 1);
    }
    return &t->e[j];
}

/* puts value v (a new reference, taken) under key a..a+n in the empty slot e; the entry after that (NULL with
 * s->fail) */
static Entry *insert(Scan *s, Intern *t, Entry *e, const unsigned char *a, Py_ssize_t n, PyObject *v, int aux) {
    unsigned char *k = malloc(n ? n : 1);
    if (!k) {
        Py_DECREF(v);
        s->fail = 1;
        return NULL;
    }
    memcpy(k, a, n);
    e->key = k, e->n = n, e->value = v, e->aux = aux;
    t->n++;
    if (t->n * 2 > t->cap) {
        if (intern_grow(t) < 0) {
            s->fail = 1;
            return NULL;
        }
        return slot_of(t, a, n); /* its slot moved */
    }
    return e;
}

/* the interned value of token a..a+n (kind TOK_STR / TOK_INT / TOK_RAW, see make_value); NULL with s->fail */
static Entry *lookup(Scan *s, Reader *r, Intern *t, const unsigned char *a, Py_ssize_t n, int kind, int esc) {
    Entry *e = slot_of(t, a, n);
    if (e->key) return e;
    PyObject *v = make_value(s, a, n, kind, esc);
    if (!v) {
        PyErr_Clear();
        s->fail = 1;
        return NULL;
    }
    int aux = -1;
    if (kind == TOK_STR) {
        PyObject *b = PyDict_GetItemWithError(r->categories, v);
        if (b) aux = (int)PyLong_AsLong(b);
        else if (PyErr_Occurred()) PyErr_Clear();
    }
    return insert(s, t, e, a, n, v, aux);
}

/* a token seen in an event: where it is and what it is */
typedef struct {
    const unsigned char *a;
    Py_ssize_t n;
    int esc;
    int kind; /* 0: absent, 1: string, 2: integer, 3: null, 4: raw value */
    int64_t i;
} Span;

enum { SP_ABSENT, SP_STR, SP_INT, SP_NULL, SP_RAW };

static int span_str(Scan *s, Span *sp) {
    if (s->p >= s->end || *s->p != '"') return s->fail = 1, -1;
    sp->a = s->p;
    if (string(s, &sp->esc) < 0) return -1;
    sp->n = s->p - sp->a;
    sp->kind = SP_STR;
    return 0;
}

/* an integer that fits int64 (msgspec's range is wider: larger ones go to the fallback) */
static int span_int(Scan *s, Span *sp) {
    sp->a = s->p;
    if (read_int(s, &sp->i) < 0) return -1;
    sp->n = s->p - sp->a;
    sp->kind = SP_INT;
    return 0;
}

static int span_null(Scan *s, Span *sp) {
    if (lit(s, "null", 4) < 0) return -1;
    sp->kind = SP_NULL;
    return 0;
}

/* the args object, type-checked for the configured keys (other keys are only checked to be JSON) */
static int kept_args(Scan *s, Reader *r, Span *out) {
    if (s->p >= s->end || *s->p != '{') return s->fail = 1, -1;
    s->p++;
    ws(s);
    if (s->p < s->end && *s->p == '}') {
        s->p++;
        return 0;
    }
    for (;;) {
        const unsigned char *k;
        Py_ssize_t kn;
        if (key(s, &k, &kn) < 0) return -1;
        int idx = -1;
        for (int i = 0; i < r->nargs; i++)
            if (kn == r->arg_lens[i] && memcmp(k, r->arg_keys[i], kn) == 0) {
                idx = i;
                break;
            }
        if (idx < 0) {
            if (skip_value(s, 3) < 0) return -1;
        } else {
            Span *sp = &out[idx];
            if (sp->kind != SP_ABSENT) return s->fail = 1, -1; /* duplicate key: leave it to msgspec */
            if (r->arg_kinds[idx] == ARG_RAW) {
                sp->a = s->p;
                if (skip_value(s, 3) < 0) return -1;
                sp->n = s->p - sp->a;
                sp->kind = SP_RAW;
            } else if (s->p < s->end && *s->p == 'n') {
                if (span_null(s, sp) < 0) return -1;
            } else if (r->arg_kinds[idx] == ARG_STR) {
                if (span_str(s, sp) < 0) return -1;
            } else if (span_int(s, sp) < 0) return -1;
        }
        int more = next_member(s);
        if (more < 0) return -1;
        if (!more) return 0;
    }
}

static PyObject *str_value(Scan *s, Reader *r, Span *sp) {
    if (sp->kind == SP_ABSENT) return Py_NewRef(r->empty);
    Entry *e = lookup(s, r, &r->strs, sp->a, sp->n, TOK_STR, sp->esc);
    return e ? Py_NewRef(e->value) : NULL;
}

/* the args struct of a kept event */
static PyObject *args_object(Scan *s, Reader *r, Span *spans) {
    PyObject *vals[MAX_ARGS];
    int n = 0;
    for (; n < r->nargs; n++) {
        Span *sp = &spans[n];
        PyObject *v = NULL;
        if (sp->kind == SP_RAW) {
            Entry *e = lookup(s, r, &r->raws, sp->a, sp->n, TOK_RAW, 0);
            v = e ? Py_NewRef(e->value) : NULL;
        } else if (sp->kind == SP_ABSENT) v = Py_NewRef(r->arg_kinds[n] == ARG_RAW ? r->raw_default : Py_None);
        else if (sp->kind == SP_NULL) v = Py_NewRef(Py_None);
        else if (sp->kind == SP_INT) v = PyLong_FromLongLong(sp->i);
        else v = str_value(s, r, sp);
        if (!v) break;
        vals[n] = v;
    }
    PyObject *obj = NULL;
    if (n == r->nargs) {
        /* events with equal args (all values interned: no integer among them) share one args object: a CPU op's
         * recorded inputs repeat with every layer and iteration (347 k ops, a few thousand distinct args on the
         * 555 MB MI300 trace). Its key: the values' identities, which the tables keep alive. */
        int shared = 1;
        for (int i = 0; i < n; i++)
            if (spans[i].kind == SP_INT) shared = 0;
        Entry *e = shared ? slot_of(&r->argsets, (const unsigned char *)vals, n * sizeof(PyObject *)) : NULL;
        if (e && e->key) obj = Py_NewRef(e->value);
        else {
            obj = PyObject_Vectorcall(r->args_type, vals, n, NULL);
            if (obj && e) {
                Py_INCREF(obj);
                if (!insert(s, &r->argsets, e, (const unsigned char *)vals, n * sizeof(PyObject *), obj, -1))
                    Py_CLEAR(obj);
            }
        }
    }
    for (int i = 0; i < n; i++) Py_DECREF(vals[i]);
    return obj;
}

/* one event: checked whole, built only when kept */
static int kept_event(Scan *s, Reader *r, Kept *o) {
    if (s->p >= s->end || *s->p != '{') return s->fail = 1, -1;
    s->p++;
    ws(s);
    Span ph = {0}, cat = {0}, name = {0}, tid = {0};
    Span argv[MAX_ARGS];
    memset(argv, 0, sizeof(argv));
    double ts = NAN, dur = NAN;
    int ts_none = 1, has_args = 0; /* has_args: an args object (not null) */
    unsigned seen = 0;
    o->seen++;
    if (s->p < s->end && *s->p == '}') {
        s->p++;
        return 0; /* no ph: not a complete event */
    }
    for (;;) {
        int field = event_key(s);
        if (field < 0) return -1;
        unsigned bit = 1u << field; /* pid and id are only checked to be JSON, as any other key: no bit */
        switch (field) {
            case K_PH:
                if (span_str(s, &ph) < 0) return -1;
                break;
            case K_CAT:
                if (span_str(s, &cat) < 0) return -1;
                break;
            case K_NAME:
                if (span_str(s, &name) < 0) return -1;
                break;
            case K_TID:
                if (s->p < s->end && *s->p == '"') {
                    if (span_str(s, &tid) < 0) return -1;
                } else if (span_int(s, &tid) < 0) return -1;
                break;
            case K_TS:
                if (s->p < s->end && *s->p == 'n') {
                    if (lit(s, "null", 4) < 0) return -1; /* ts: null is None */
                } else {
                    if (read_float(s, &ts) < 0) return -1;
                    ts_none = 0;
                }
                break;
            case K_DUR:
                if (read_float(s, &dur) < 0) return -1;
                break;
            case K_ARGS:
                if (s->p < s->end && *s->p == 'n') {
                    if (lit(s, "null", 4) < 0) return -1;
                } else {
                    if (kept_args(s, r, argv) < 0) return -1;
                    has_args = 1;
                }
                break;
            default:
                bit = 0;
                if (skip_value(s, 2) < 0) return -1;
        }
        if (bit) {
            if (seen & bit) return s->fail = 1, -1; /* duplicate key: leave it to msgspec */
            seen |= bit;
        }
        int more = next_member(s);
        if (more < 0) return -1;
        if (!more) break;
    }
    /* kept: a complete event ("X") of a configured category */
    if (ph.kind == SP_ABSENT || cat.kind == SP_ABSENT) return 0;
    Entry *pe = NULL;
    if (ph.esc) { /* spelled with an escape: compare its value */
        if (!(pe = lookup(s, r, &r->strs, ph.a, ph.n, TOK_STR, 1))) return -1;
        if (PyUnicode_CompareWithASCIIString(pe->value, "X") != 0) return 0;
    } else if (ph.n != 3 || ph.a[1] != 'X') return 0;
    Entry *ce = lookup(s, r, &r->strs, cat.a, cat.n, TOK_STR, cat.esc);
    if (!ce) return -1;
    int b = ce->aux;
    if (b < 0 || b >= r->nbuckets) return 0;
    int need = r->need_arg[b];
    if (need >= 0 && (!has_args || argv[need].kind == SP_ABSENT || argv[need].kind == SP_NULL)) return 0;

    PyObject *vals[7] = {NULL};
    int ok = 1;
    if (!pe) pe = lookup(s, r, &r->strs, ph.a, ph.n, TOK_STR, 0);
    vals[0] = pe ? Py_NewRef(pe->value) : NULL;
    vals[1] = Py_NewRef(ce->value);
    vals[2] = vals[0] ? str_value(s, r, &name) : NULL;
    int64_t tid_num = 0;
    if (vals[2]) {
        if (tid.kind == SP_ABSENT) vals[3] = Py_NewRef(r->zero);
        else {
            Entry *te = tid.kind == SP_STR ? lookup(s, r, &r->strs, tid.a, tid.n, TOK_STR, tid.esc)
                                           : lookup(s, r, &r->ints, tid.a, tid.n, TOK_INT, 0);
            vals[3] = te ? Py_NewRef(te->value) : NULL;
            if (tid.kind == SP_STR) o->tid_str[b] = 1;
            else tid_num = tid.i;
        }
    }
    if (vals[3]) vals[4] = ts_none ? Py_NewRef(Py_None) : PyFloat_FromDouble(ts);
    if (vals[4]) vals[5] = PyFloat_FromDouble(dur);
    if (vals[5]) vals[6] = has_args ? args_object(s, r, argv) : Py_NewRef(Py_None);
    PyObject *ev = NULL;
    if (vals[6]) ev = PyObject_Vectorcall(r->ev_type, vals, 7, NULL);
    for (int i = 0; i < 7; i++) Py_XDECREF(vals[i]);
    if (!ev || PyList_Append(o->lists[b], ev) < 0) ok = 0;
    Py_XDECREF(ev);
    if (ok && (push_f64(&o->ts[b], ts) || push_f64(&o->dur[b], dur) || push_i64(&o->tid[b], tid_num))) ok = 0;
    if (!ok) {
        PyErr_Clear();
        return s->fail = 1, -1;
    }
    return 0;
}

typedef struct {
    Reader *r;
    Kept *o;
} KeptTarget;

static int kept_item(Scan *s, void *target) {
    KeptTarget *t = (KeptTarget *)target;
    return kept_event(s, t->r, t->o);
}

static int kept_events(Scan *s, Reader *r, Kept *o) {
    KeptTarget target = {r, o};
    return array_items(s, kept_item, &target);
}

/* non-overlapping occurrences of needle (m >= 3 bytes) in a..z, left to right, as bytes.count counts them:
 * candidates where its first three bytes match, 16 positions at a time (glibc's memmem, called per occurrence,
 * cost ~10 % of the whole decode here) */
static Py_ssize_t count_of(const unsigned char *a, const unsigned char *z, const char *needle, Py_ssize_t m) {
    Py_ssize_t n = 0;
    const unsigned char *p = a, *free_from = a; /* a match may start at free_from or later (no overlap) */
#ifdef __SSE2__
    const __m128i c0 = _mm_set1_epi8(needle[0]), c1 = _mm_set1_epi8(needle[1]), c2 = _mm_set1_epi8(needle[2]);
    while (z - p >= 18) {
        __m128i e0 = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)p), c0);
        __m128i e1 = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(p + 1)), c1);
        __m128i e2 = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(p + 2)), c2);
        unsigned bits = (unsigned)_mm_movemask_epi8(_mm_and_si128(_mm_and_si128(e0, e1), e2));
        while (bits) {
            const unsigned char *q = p + __builtin_ctz(bits);
            bits &= bits - 1;
            if (q >= free_from && z - q >= m && memcmp(q, needle, m) == 0) {
                n++;
                free_from = q + m;
            }
        }
        p += 16;
    }
#endif
    for (; z - p >= m; p++)
        if (p >= free_from && *p == (unsigned char)needle[0] && memcmp(p, needle, m) == 0) {
            n++;
            free_from = p + m;
        }
    return n;
}

/* How many events a piece holds when every one of them has a skipped category, else 0: the rule of
 * columns.PieceSkipper (so both paths skip the same pieces undecoded): the piece's first '"cat":' key is one of
 * the skip keys ('"cat": "<c>"' or '"cat":"<c>"') and that key occurs as often as '"ph":' keys do. */
static Py_ssize_t skipped_piece(Reader *r, const unsigned char *a, const unsigned char *z) {
    const unsigned char *first = memmem(a, z - a, "\"cat\":", 6);
    if (!first) return 0;
    for (int i = 0; i < r->nskip; i++) {
        PyObject *k = PyList_GET_ITEM(r->skip_ref, i);
        Py_ssize_t m = PyBytes_GET_SIZE(k);
        const char *key = PyBytes_AS_STRING(k);
        if (z - first < m || memcmp(first, key, m) != 0) continue;
        Py_ssize_t events = count_of(a, z, "\"ph\":", 5);
        return events && count_of(a, z, key, m) == events ? events : 0;
    }
    return 0;
}

/* read(buf, unescape, may_skip=False) -> (lists, ts, dur, tid, tid_is_str, seen) per bucket; the number of
 * events of a piece skipped whole (skipped_piece, only when may_skip); None when not handled */
static PyObject *reader_read(Reader *r, PyObject *argsobj) {
    Py_buffer view;
    PyObject *unescape;
    int may_skip = 0;
    if (!PyArg_ParseTuple(argsobj, "y*O|p", &view, &unescape, &may_skip)) return NULL;
    Scan s = {(const unsigned char *)view.buf, (const unsigned char *)view.buf + view.len, 0, unescape};
    if (r->nskip && may_skip) {
        Py_ssize_t skipped = skipped_piece(r, s.p, s.end);
        if (skipped) {
            PyBuffer_Release(&view);
            return PyLong_FromSsize_t(skipped);
        }
    }
    Kept o = r->out; /* the columns' buffers of earlier pieces (no malloc/free per piece: heap trimming churned) */
    o.seen = 0;
    int ok = 1;
    for (int b = 0; b < r->nbuckets; b++) {
        o.ts[b].item = o.dur[b].item = o.tid[b].item = 8;
        o.ts[b].len = o.dur[b].len = o.tid[b].len = 0;
        o.tid_str[b] = 0;
        if (!(o.lists[b] = PyList_New(0))) ok = 0;
    }
    if (ok) {
        ws(&s);
        if (s.p < s.end && *s.p == '[') {
            if (kept_events(&s, r, &o) == 0) {
                ws(&s);
                if (s.p != s.end) s.fail = 1;
            }
        } else s.fail = 1;
        if (s.fail) ok = 0;
    }
    PyObject *result = NULL;
    if (ok && !PyErr_Occurred()) {
        PyObject *t[5];
        for (int i = 0; i < 5; i++) t[i] = PyTuple_New(r->nbuckets);
        int built = t[0] && t[1] && t[2] && t[3] && t[4];
        for (int b = 0; built && b < r->nbuckets; b++) {
            PyTuple_SET_ITEM(t[0], b, Py_NewRef(o.lists[b]));
            PyTuple_SET_ITEM(t[1], b, col_bytes(&o.ts[b]));
            PyTuple_SET_ITEM(t[2], b, col_bytes(&o.dur[b]));
            PyTuple_SET_ITEM(t[3], b, col_bytes(&o.tid[b]));
            PyTuple_SET_ITEM(t[4], b, PyBool_FromLong(o.tid_str[b]));
        }
        if (built && !PyErr_Occurred()) result = Py_BuildValue("(NNNNNn)", t[0], t[1], t[2], t[3], t[4], o.seen);
        else
            for (int i = 0; i < 5; i++) Py_XDECREF(t[i]);
    }
    if (!result) {
        PyErr_Clear();
        result = Py_NewRef(Py_None);
    }
    for (int b = 0; b < r->nbuckets; b++) Py_CLEAR(o.lists[b]);
    r->out = o;
    PyBuffer_Release(&view);
    return result;
}

/* Reader(ev_type, args_type, categories: {cat: bucket}, nbuckets, arg_keys: [(key bytes, kind)], raw_default,
 *        need_arg: [arg index or -1 per bucket], skip_keys: [bytes]) */
static int reader_init(Reader *r, PyObject *a, PyObject *kw) {
    PyObject *ev_type, *args_type, *cats, *keys, *raw_default, *need, *skip;
    int nb;
    if (r->ev_type) {
        PyErr_SetString(PyExc_TypeError, "Reader is initialised once");
        return -1;
    }
    if (!PyArg_ParseTuple(a, "OOO!iO!OO!O!", &ev_type, &args_type, &PyDict_Type, &cats, &nb, &PyList_Type, &keys,
                          &raw_default, &PyList_Type, &need, &PyList_Type, &skip))
        return -1;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(skip); i++)
        if (!PyBytes_Check(PyList_GET_ITEM(skip, i)) || PyBytes_GET_SIZE(PyList_GET_ITEM(skip, i)) == 0) {
            PyErr_SetString(PyExc_TypeError, "skip keys must be non-empty bytes");
            return -1;
        }
    if (nb < 1 || nb > MAX_BUCKETS || PyList_GET_SIZE(keys) > MAX_ARGS || PyList_GET_SIZE(need) != nb) {
        PyErr_SetString(PyExc_ValueError, "too many buckets or argument keys");
        return -1;
    }
    r->nargs = (int)PyList_GET_SIZE(keys);
    for (int i = 0; i < r->nargs; i++) {
        PyObject *item = PyList_GET_ITEM(keys, i);
        PyObject *k;
        int kind;
        if (!PyArg_ParseTuple(item, "O!i", &PyBytes_Type, &k, &kind)) return -1;
        if (kind < ARG_INT || kind > ARG_RAW) {
            PyErr_SetString(PyExc_ValueError, "unknown argument kind");
            return -1;
        }
        r->arg_keys[i] = PyBytes_AS_STRING(k);
        r->arg_lens[i] = PyBytes_GET_SIZE(k);
        r->arg_kinds[i] = kind;
    }
    for (int b = 0; b < nb; b++) {
        r->need_arg[b] = (int)PyLong_AsLong(PyList_GET_ITEM(need, b));
        if (PyErr_Occurred()) return -1;
        if (r->need_arg[b] >= r->nargs || (r->need_arg[b] >= 0 && r->arg_kinds[r->need_arg[b]] == ARG_RAW)) {
            PyErr_SetString(PyExc_ValueError, "need_arg must name an int or str argument");
            return -1;
        }
    }
    r->nbuckets = nb;
    r->ev_type = Py_NewRef(ev_type);
    r->args_type = Py_NewRef(args_type);
    r->categories = Py_NewRef(cats);
    r->raw_default = Py_NewRef(raw_default);
    r->keys_ref = Py_NewRef(keys);
    r->skip_ref = Py_NewRef(skip);
    r->nskip = (int)PyList_GET_SIZE(skip);
    r->empty = PyUnicode_New(0, 0);
    r->zero = PyLong_FromLong(0);
    if (!r->empty || !r->zero || intern_init(&r->strs) < 0 || intern_init(&r->ints) < 0 || intern_init(&r->raws) < 0 ||
        intern_init(&r->argsets) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static void reader_dealloc(Reader *r) {
    Py_XDECREF(r->ev_type);
    Py_XDECREF(r->args_type);
    Py_XDECREF(r->categories);
    Py_XDECREF(r->raw_default);
    Py_XDECREF(r->keys_ref);
    Py_XDECREF(r->skip_ref);
    Py_XDECREF(r->empty);
    Py_XDECREF(r->zero);
    intern_free(&r->strs);
    intern_free(&r->ints);
    intern_free(&r->raws);
    intern_free(&r->argsets);
    for (int b = 0; b < MAX_BUCKETS; b++) free(r->out.ts[b].data), free(r->out.dur[b].data), free(r->out.tid[b].data);
    Py_TYPE(r)->tp_free((PyObject *)r);
}

static PyMethodDef reader_methods[] = {
    {"read", (PyCFunction)reader_read, METH_VARARGS,
     "read(buf, unescape, may_skip=False) -> (lists, ts, dur, tid, tid_is_str, seen), each per bucket but seen; "
     "an int (events) for a piece skipped whole; None when not handled"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "magpie_trace_native._kineto_kept.Reader",
    .tp_basicsize = sizeof(Reader),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)reader_init,
    .tp_dealloc = (destructor)reader_dealloc,
    .tp_methods = reader_methods,
};


/* ---- nesting of intervals: what encloses each call ---- */

/* chains(order, ts, ends, tid, n_ops, n_calls) -> list of tuples: for each call (items n_ops.. of the columns),
 * the items (< n_ops) open at its start on its thread, innermost first. ``order``: the items to sweep, sorted by
 * thread, start, longer first, ops before calls (int64); ``ts``/``ends``: float64 starts and ends; ``tid``: int64
 * thread keys; all by item index. An op is open at t while its end > t (the Python sweep's rule). */
static PyObject *chains(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer ob, tb, eb, ib;
    Py_ssize_t n_ops, n_calls;
    if (!PyArg_ParseTuple(args, "y*y*y*y*nn", &ob, &tb, &eb, &ib, &n_ops, &n_calls)) return NULL;
    PyObject *out = NULL;
    Py_ssize_t n = ob.len / 8, items = tb.len / 8;
    int64_t *stack = NULL;
    double *stack_end = NULL;
    if (eb.len / 8 != items || ib.len / 8 != items || n_ops + n_calls != items || n_ops < 0 || n_calls < 0) {
        PyErr_SetString(PyExc_ValueError, "chains: columns of different lengths");
        goto done;
    }
    const int64_t *order = ob.buf, *tid = ib.buf;
    const double *ts = tb.buf, *ends = eb.buf;
    stack = malloc((n + 1) * sizeof(int64_t));
    stack_end = malloc((n + 1) * sizeof(double));
    out = PyList_New(n_calls);
    if (!stack || !stack_end || !out) {
        Py_CLEAR(out);
        PyErr_NoMemory();
        goto done;
    }
    PyObject *empty = PyTuple_New(0);
    if (!empty) {
        Py_CLEAR(out);
        goto done;
    }
    for (Py_ssize_t c = 0; c < n_calls; c++) PyList_SET_ITEM(out, c, Py_NewRef(empty));
    Py_DECREF(empty);
    Py_ssize_t depth = 0;
    int64_t current = 0;
    int started = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        int64_t i = order[k];
        if (i < 0 || i >= items) {
            Py_CLEAR(out);
            PyErr_SetString(PyExc_IndexError, "chains: item out of range");
            goto done;
        }
        if (!started || tid[i] != current) {
            current = tid[i];
            started = 1;
            depth = 0;
        }
        double t = ts[i];
        while (depth && stack_end[depth - 1] <= t) depth--;
        if (i < n_ops) {
            stack[depth] = i;
            stack_end[depth++] = ends[i];
        } else if (depth) {
            PyObject *tup = PyTuple_New(depth);
            if (!tup) {
                Py_CLEAR(out);
                goto done;
            }
            for (Py_ssize_t d = 0; d < depth; d++) {
                PyObject *v = PyLong_FromLongLong(stack[depth - 1 - d]);
                if (!v) {
                    Py_DECREF(tup);
                    Py_CLEAR(out);
                    goto done;
                }
                PyTuple_SET_ITEM(tup, d, v);
            }
            PyObject *old = PyList_GET_ITEM(out, i - n_ops);
            PyList_SET_ITEM(out, i - n_ops, tup);
            Py_DECREF(old);
        }
    }
done:
    free(stack);
    free(stack_end);
    PyBuffer_Release(&ob);
    PyBuffer_Release(&tb);
    PyBuffer_Release(&eb);
    PyBuffer_Release(&ib);
    return out;
}

static PyMethodDef kept_functions[] = {
    {"chains", chains, METH_VARARGS,
     "chains(order, ts, ends, tid, n_ops, n_calls) -> per call, the ops open at its start, innermost first"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef kept_module = {PyModuleDef_HEAD_INIT, "_kineto_kept", NULL, -1, kept_functions, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__kineto_kept(void) {
    if (PyType_Ready(&ReaderType) < 0) return NULL;
    PyObject *m = PyModule_Create(&kept_module);
    if (!m) return NULL;
    if (PyModule_AddObject(m, "Reader", Py_NewRef((PyObject *)&ReaderType)) < 0) {
        Py_DECREF((PyObject *)&ReaderType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
