/* Integer expressions of timing and constraints (docs/isa.md, "Expressions").
 * Parsed once into a tree (kept for hashing and for folding a target's
 * parameters in), compiled to a small stack code evaluated per instruction.
 * Values are exact rationals, so ceil(a/b) means what it says; if, && and
 * || evaluate lazily, so a guarded division never faults. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "target/tgt_internal.h"

enum xop {
    X_NUM, X_FIELD, X_PARAM,
    X_NEG, X_NOT, X_CEIL, X_FLOOR,
    X_ADD, X_SUB, X_MUL, X_DIV, X_MOD, X_LT, X_LE, X_GT, X_GE, X_EQ, X_NE, X_MIN, X_MAX,
    X_AND, X_OR, X_IF,
    /* code only */
    X_JZ, X_JNZ, X_JMP, X_BOOL,
};

static const char *const op_names[] = {
    "num", "field", "param", "neg", "not", "ceil", "floor", "add", "sub", "mul", "div", "mod",
    "lt", "le", "gt", "ge", "eq", "ne", "min", "max", "and", "or", "if",
};

struct xnode {
    int op;
    int64_t val; /* X_NUM: value; X_FIELD / X_PARAM: index */
    xnode *a, *b, *c;
};

typedef struct xins {
    int op;
    int64_t n, d; /* X_NUM: n/d; X_FIELD/X_PARAM: n = index; jumps: n = target */
} xins;

enum { XMAX_NEST = 32, XMAX_STACK = 96 };

struct tgt_expr {
    const xnode *root;
    int ncode;
    xins *code;
    bool integral; /* every value an integer: ieval gives xeval's results without rationals */
};

/* ---- rationals ----------------------------------------------------------------- */

static uint64_t ugcd(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static bool rmake(int64_t n, int64_t d, xrat *o)
{
    if (d == 0)
        return false;
    if (d < 0) {
        if (n == INT64_MIN || d == INT64_MIN)
            return false;
        n = -n;
        d = -d;
    }
    /* reduce only when the terms grow large: gcd per operation is the
     * slow part, and ceil, floor and comparisons work on any n/d */
    uint64_t un = n < 0 ? 0 - (uint64_t)n : (uint64_t)n;
    if (d != 1 && (un > (1u << 30) || d > (1 << 30))) {
        uint64_t g = ugcd(un, (uint64_t)d);
        if (g > 1) {
            n /= (int64_t)g;
            d /= (int64_t)g;
        }
    }
    if (d != 1 && n % d == 0) {
        n /= d;
        d = 1;
    }
    o->n = n;
    o->d = d;
    return true;
}

static int64_t rfloor(xrat r)
{
    int64_t q = r.n / r.d;
    if (r.n % r.d != 0 && r.n < 0)
        q--;
    return q;
}

int64_t xrat_ceil(xrat r)
{
    int64_t q = r.n / r.d;
    if (r.n % r.d != 0 && r.n > 0)
        q++;
    return q;
}

/* -1, 0, 1; false on overflow */
static bool rcmp(xrat a, xrat b, int *out)
{
    int64_t l, r;
    if (a.d == b.d) {
        l = a.n;
        r = b.n;
    } else if (__builtin_mul_overflow(a.n, b.d, &l) || __builtin_mul_overflow(b.n, a.d, &r)) {
        return false;
    }
    *out = (l > r) - (l < r);
    return true;
}

static bool rbin(int op, xrat a, xrat b, xrat *o)
{
    int64_t x, y, n, d;
    int c;
    switch (op) {
    case X_ADD:
    case X_SUB:
        if (op == X_SUB) {
            if (b.n == INT64_MIN)
                return false;
            b.n = -b.n;
        }
        if (a.d == 1 && b.d == 1) {
            if (__builtin_add_overflow(a.n, b.n, &n))
                return false;
            *o = (xrat){n, 1};
            return true;
        }
        if (__builtin_mul_overflow(a.n, b.d, &x) || __builtin_mul_overflow(b.n, a.d, &y) ||
            __builtin_add_overflow(x, y, &n) || __builtin_mul_overflow(a.d, b.d, &d))
            return false;
        return rmake(n, d, o);
    case X_MUL:
        if (__builtin_mul_overflow(a.n, b.n, &n) || __builtin_mul_overflow(a.d, b.d, &d))
            return false;
        if (d == 1) {
            *o = (xrat){n, 1};
            return true;
        }
        return rmake(n, d, o);
    case X_DIV:
        if (b.n == 0)
            return false;
        if (a.d == 1 && b.d == 1 && b.n > 0) /* the common case: no sign fix-up, no overflow */
            return rmake(a.n, b.n, o);
        if (__builtin_mul_overflow(a.n, b.d, &n) || __builtin_mul_overflow(a.d, b.n, &d))
            return false;
        return rmake(n, d, o);
    case X_MOD: { /* a - b * floor(a / b) */
        xrat q;
        if (!rbin(X_DIV, a, b, &q))
            return false;
        xrat f = {rfloor(q), 1}, bf;
        return rbin(X_MUL, b, f, &bf) && rbin(X_SUB, a, bf, o);
    }
    case X_MIN:
    case X_MAX:
        if (!rcmp(a, b, &c))
            return false;
        *o = (op == X_MIN) == (c <= 0) ? a : b;
        return true;
    default:
        if (!rcmp(a, b, &c))
            return false;
        switch (op) {
        case X_LT: c = c < 0; break;
        case X_LE: c = c <= 0; break;
        case X_GT: c = c > 0; break;
        case X_GE: c = c >= 0; break;
        case X_EQ: c = c == 0; break;
        default: c = c != 0; break; /* X_NE */
        }
        *o = (xrat){c, 1};
        return true;
    }
}

static bool run(int op, xrat a, xrat *o)
{
    switch (op) {
    case X_NEG:
        if (a.n == INT64_MIN)
            return false;
        *o = (xrat){-a.n, a.d};
        return true;
    case X_NOT: *o = (xrat){a.n == 0, 1}; return true;
    case X_BOOL: *o = (xrat){a.n != 0, 1}; return true;
    case X_CEIL: *o = (xrat){xrat_ceil(a), 1}; return true;
    default: *o = (xrat){rfloor(a), 1}; return true; /* X_FLOOR */
    }
}

/* ---- parser ----------------------------------------------------------------------- */

typedef struct xparser {
    npu_arena *a;
    const char *s;
    size_t pos;
    int nest;
    xresolve_fn resolve;
    void *ud;
    size_t errpos;
    char *msg;
    size_t cap;
    bool failed;
} xparser;

static xnode *perr(xparser *p, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static xnode *perr(xparser *p, size_t at, const char *fmt, ...)
{
    if (!p->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->msg, p->cap, fmt, ap);
        va_end(ap);
        p->errpos = at;
        p->failed = true;
    }
    return NULL;
}

static xnode *mk(xparser *p, int op, xnode *a, xnode *b, xnode *c)
{
    xnode *n = npu_arena_alloc(p->a, sizeof *n);
    if (!n)
        return perr(p, p->pos, "out of memory");
    n->op = op;
    n->a = a;
    n->b = b;
    n->c = c;
    return n;
}

static void skip(xparser *p)
{
    while (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' || p->s[p->pos] == '\n' || p->s[p->pos] == '\r')
        p->pos++;
}

/* Consumes tok (after blanks) when it is next. */
static bool eat(xparser *p, const char *tok)
{
    skip(p);
    size_t n = strlen(tok);
    if (strncmp(p->s + p->pos, tok, n) != 0)
        return false;
    /* '<' must not eat the start of '<=', '!' not that of '!=' */
    if (n == 1 && (tok[0] == '<' || tok[0] == '>' || tok[0] == '!' || tok[0] == '=') && p->s[p->pos + 1] == '=')
        return false;
    p->pos += n;
    return true;
}

static xnode *expr(xparser *p);

static xnode *primary(xparser *p)
{
    skip(p);
    size_t at = p->pos;
    const char *s = p->s;
    if (isdigit((unsigned char)s[at])) {
        int base = 10;
        size_t i = at;
        if (s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X'))
            base = 16, i += 2;
        int64_t v = 0;
        size_t start = i;
        for (;; i++) {
            int dgt = isdigit((unsigned char)s[i]) ? s[i] - '0'
                      : (base == 16 && isxdigit((unsigned char)s[i])) ? tolower((unsigned char)s[i]) - 'a' + 10
                                                                      : -1;
            if (dgt < 0)
                break;
            if (__builtin_mul_overflow(v, base, &v) || __builtin_add_overflow(v, dgt, &v))
                return perr(p, at, "number too large");
        }
        if (i == start || isalpha((unsigned char)s[i]) || s[i] == '_')
            return perr(p, at, "expected a number");
        p->pos = i;
        xnode *n = mk(p, X_NUM, NULL, NULL, NULL);
        if (n)
            n->val = v;
        return n;
    }
    if (isalpha((unsigned char)s[at]) || s[at] == '_') {
        size_t i = at;
        for (;;) {
            while (isalnum((unsigned char)s[i]) || s[i] == '_')
                i++;
            if (s[i] == '.' && (isalpha((unsigned char)s[i + 1]) || s[i + 1] == '_'))
                i++;
            else
                break;
        }
        char name[64];
        if (i - at >= sizeof name)
            return perr(p, at, "name too long");
        memcpy(name, s + at, i - at);
        name[i - at] = '\0';
        p->pos = i;
        skip(p);
        if (s[p->pos] == '(')
            return perr(p, at, "'%s' is not a function (expected ceil, floor, min, max or if)", name);
        int64_t v;
        xref_kind k = p->resolve(p->ud, name, &v);
        if (k == XREF_NONE)
            return perr(p, at,
                        "unknown name '%s' (expected a field of the instruction, a target parameter "
                        "such as mac.rows, an enum value such as region.flash, or an ISA constant)",
                        name);
        xnode *n = mk(p, k == XREF_FIELD ? X_FIELD : k == XREF_PARAM ? X_PARAM : X_NUM, NULL, NULL, NULL);
        if (n)
            n->val = v;
        return n;
    }
    if (eat(p, "(")) {
        xnode *n = expr(p);
        if (n && !eat(p, ")"))
            return perr(p, p->pos, "expected ')'");
        return n;
    }
    if (!s[at])
        return perr(p, at, "expected an operand, got the end of the expression");
    return perr(p, at, "expected an operand, got '%c'", s[at]);
}

static const struct {
    const char *name;
    int op, min_args, max_args;
} funcs[] = {
    {"ceil", X_CEIL, 1, 1}, {"floor", X_FLOOR, 1, 1}, {"min", X_MIN, 2, 16},
    {"max", X_MAX, 2, 16},  {"if", X_IF, 3, 3},
};

static xnode *call_or_primary(xparser *p)
{
    skip(p);
    size_t at = p->pos, i = at;
    while (isalnum((unsigned char)p->s[i]) || p->s[i] == '_')
        i++;
    size_t j = i;
    while (p->s[j] == ' ' || p->s[j] == '\t')
        j++;
    if (i == at || p->s[j] != '(' || isdigit((unsigned char)p->s[at]))
        return primary(p);
    int f = 0, nf = (int)(sizeof funcs / sizeof funcs[0]);
    while (f < nf && !(strlen(funcs[f].name) == i - at && strncmp(funcs[f].name, p->s + at, i - at) == 0))
        f++;
    if (f == nf)
        return perr(p, at, "unknown function '%.*s' (expected ceil, floor, min, max or if)", (int)(i - at),
                    p->s + at);
    p->pos = j + 1;
    xnode *args[16];
    int n = 0;
    for (;;) {
        if (n == 16)
            return perr(p, p->pos, "too many arguments to '%s'", funcs[f].name);
        if (!(args[n++] = expr(p)))
            return NULL;
        if (eat(p, ","))
            continue;
        if (eat(p, ")"))
            break;
        return perr(p, p->pos, "expected ',' or ')' in the arguments of '%s'", funcs[f].name);
    }
    if (n < funcs[f].min_args || n > funcs[f].max_args)
        return perr(p, at, "'%s' takes %d%s argument%s, got %d", funcs[f].name, funcs[f].min_args,
                    funcs[f].max_args > funcs[f].min_args ? " or more" : "", funcs[f].min_args > 1 ? "s" : "", n);
    int op = funcs[f].op;
    if (op == X_IF)
        return mk(p, X_IF, args[0], args[1], args[2]);
    if (op == X_CEIL || op == X_FLOOR)
        return mk(p, op, args[0], NULL, NULL);
    xnode *acc = args[0];
    for (int k = 1; k < n && acc; k++)
        acc = mk(p, op, acc, args[k], NULL);
    return acc;
}

static xnode *unary(xparser *p)
{
    if (++p->nest > XMAX_NEST)
        return perr(p, p->pos, "expression nested too deeply (at most %d levels)", XMAX_NEST);
    xnode *n;
    if (eat(p, "-")) {
        xnode *a = unary(p);
        n = a ? mk(p, X_NEG, a, NULL, NULL) : NULL;
    } else if (eat(p, "!")) {
        xnode *a = unary(p);
        n = a ? mk(p, X_NOT, a, NULL, NULL) : NULL;
    } else if (eat(p, "+")) {
        n = unary(p);
    } else {
        n = call_or_primary(p);
    }
    p->nest--;
    return n;
}

static xnode *binary(xparser *p, int level);

static const struct {
    const char *tok;
    int op, level;
} binops[] = {
    /* longer tokens first so that "<=" is not read as "<" */
    {"||", X_OR, 0}, {"&&", X_AND, 1}, {"==", X_EQ, 2}, {"!=", X_NE, 2}, {"<=", X_LE, 3}, {">=", X_GE, 3},
    {"<", X_LT, 3},  {">", X_GT, 3},   {"+", X_ADD, 4},  {"-", X_SUB, 4},  {"*", X_MUL, 5},  {"/", X_DIV, 5},
    {"%", X_MOD, 5},
};

static xnode *binary(xparser *p, int level)
{
    if (level > 5)
        return unary(p);
    xnode *l = binary(p, level + 1);
    while (l) {
        int op = -1;
        for (size_t i = 0; i < sizeof binops / sizeof binops[0]; i++)
            if (binops[i].level == level && eat(p, binops[i].tok)) {
                op = binops[i].op;
                break;
            }
        if (op < 0)
            break;
        xnode *r = binary(p, level + 1);
        if (!r)
            return NULL;
        l = mk(p, op, l, r, NULL);
    }
    return l;
}

static xnode *expr(xparser *p)
{
    if (++p->nest > XMAX_NEST)
        return perr(p, p->pos, "expression nested too deeply (at most %d levels)", XMAX_NEST);
    xnode *n = binary(p, 0);
    p->nest--;
    return n;
}

npu_status xparse(npu_arena *a, const char *src, xresolve_fn resolve, void *ud, xnode **out, size_t *errpos,
                  char *msg, size_t cap)
{
    xparser p = {.a = a, .s = src, .resolve = resolve, .ud = ud, .msg = msg, .cap = cap};
    xnode *n = expr(&p);
    if (n) {
        skip(&p);
        if (src[p.pos])
            n = perr(&p, p.pos, "expected an operator or the end of the expression, got '%c'", src[p.pos]);
    }
    if (!n) {
        if (!p.failed)
            perr(&p, p.pos, "expected an expression");
        *errpos = p.errpos;
        return strcmp(msg, "out of memory") == 0 ? NPU_EINTERNAL : NPU_EUSER;
    }
    *out = n;
    return NPU_OK;
}

/* ---- evaluation of trees (folding) ---------------------------------------------- */

static bool uses(const xnode *n, int op)
{
    return n && (n->op == op || uses(n->a, op) || uses(n->b, op) || uses(n->c, op));
}

bool xnode_uses_params(const xnode *n)
{
    return uses(n, X_PARAM);
}

static bool tree_eval(const xnode *n, const int64_t *fields, const int64_t *params, xrat *o)
{
    xrat a, b;
    switch (n->op) {
    case X_NUM: *o = (xrat){n->val, 1}; return true;
    case X_FIELD: *o = (xrat){fields[n->val], 1}; return true;
    case X_PARAM: *o = (xrat){params[n->val], 1}; return true;
    case X_NEG: case X_NOT: case X_CEIL: case X_FLOOR:
        return tree_eval(n->a, fields, params, &a) && run(n->op, a, o);
    case X_AND: case X_OR:
        if (!tree_eval(n->a, fields, params, &a))
            return false;
        if ((a.n != 0) == (n->op == X_OR)) {
            *o = (xrat){n->op == X_OR, 1};
            return true;
        }
        return tree_eval(n->b, fields, params, &b) && run(X_BOOL, b, o);
    case X_IF:
        if (!tree_eval(n->a, fields, params, &a))
            return false;
        return tree_eval(a.n ? n->b : n->c, fields, params, o);
    default:
        return tree_eval(n->a, fields, params, &a) && tree_eval(n->b, fields, params, &b) &&
               rbin(n->op, a, b, o);
    }
}

/* ---- compilation ---------------------------------------------------------------------- */

typedef struct xcomp {
    xins *code;
    int n, cap, depth, max;
    const int64_t *params;
    npu_arena *a;
    bool oom;
} xcomp;

static int emit(xcomp *c, int op, int64_t n, int64_t d)
{
    if (c->n == c->cap) {
        int ncap = c->cap ? 2 * c->cap : 16;
        xins *nc = npu_arena_grow(c->a, c->code, (size_t)c->cap * sizeof *nc, (size_t)ncap * sizeof *nc);
        if (!nc) {
            c->oom = true;
            return 0;
        }
        c->code = nc;
        c->cap = ncap;
    }
    c->code[c->n] = (xins){op, n, d};
    return c->n++;
}

static void push(xcomp *c, int delta)
{
    c->depth += delta;
    if (c->depth > c->max)
        c->max = c->depth;
}

static void comp(xcomp *c, const xnode *n)
{
    xrat v;
    /* fold subtrees that read no field (parameters are known when binding) */
    if (n->op != X_NUM && !uses(n, X_FIELD) && (c->params || !uses(n, X_PARAM)) &&
        tree_eval(n, NULL, c->params, &v)) {
        emit(c, X_NUM, v.n, v.d);
        push(c, 1);
        return;
    }
    int j, k;
    switch (n->op) {
    case X_NUM: emit(c, X_NUM, n->val, 1); push(c, 1); return;
    case X_FIELD: emit(c, X_FIELD, n->val, 0); push(c, 1); return;
    case X_PARAM:
        if (c->params)
            emit(c, X_NUM, c->params[n->val], 1);
        else
            emit(c, X_PARAM, n->val, 0);
        push(c, 1);
        return;
    case X_NEG: case X_NOT: case X_CEIL: case X_FLOOR:
        comp(c, n->a);
        emit(c, n->op, 0, 0);
        return;
    case X_AND: case X_OR:
        comp(c, n->a);
        j = emit(c, n->op == X_AND ? X_JZ : X_JNZ, 0, 0);
        push(c, -1);
        comp(c, n->b);
        emit(c, X_BOOL, 0, 0);
        k = emit(c, X_JMP, 0, 0);
        if (!c->oom)
            c->code[j].n = c->n;
        emit(c, X_NUM, n->op == X_OR, 1);
        if (!c->oom)
            c->code[k].n = c->n;
        return;
    case X_IF:
        comp(c, n->a);
        j = emit(c, X_JZ, 0, 0);
        push(c, -1);
        comp(c, n->b);
        k = emit(c, X_JMP, 0, 0);
        push(c, -1);
        if (!c->oom)
            c->code[j].n = c->n;
        comp(c, n->c);
        if (!c->oom)
            c->code[k].n = c->n;
        return;
    default:
        comp(c, n->a);
        comp(c, n->b);
        emit(c, n->op, 0, 0);
        push(c, -1);
        return;
    }
}

/* Is every value of the code an integer? Constants are, and a quotient is
 * when ceil or floor takes it at once (the next instruction: the parent's,
 * as a jump that lands there brings an integer, which they leave alone). */
static bool integral(const xins *code, int n)
{
    for (int pc = 0; pc < n; pc++)
        if ((code[pc].op == X_NUM && code[pc].d != 1) ||
            (code[pc].op == X_DIV && (pc + 1 == n || (code[pc + 1].op != X_CEIL && code[pc + 1].op != X_FLOOR))))
            return false;
    return true;
}

tgt_expr *xcompile(npu_arena *a, const xnode *root, const int64_t *params)
{
    xcomp c = {.params = params, .a = a};
    comp(&c, root);
    if (c.oom || c.max > XMAX_STACK)
        return NULL;
    tgt_expr *e = npu_arena_alloc(a, sizeof *e);
    if (!e)
        return NULL;
    e->root = root;
    e->code = c.code;
    e->ncode = c.n;
    e->integral = integral(c.code, c.n);
    return e;
}

const xnode *xexpr_root(const tgt_expr *e)
{
    return e->root;
}

/* The pc before the next instruction after X_JZ or X_JNZ on a value that is nonzero or not. */
static int branch(const xins *in, int pc, bool nonzero)
{
    return nonzero == (in->op == X_JNZ) ? (int)in->n - 1 : pc;
}

/* ---- integer evaluation ------------------------------------------------------------ */

/* ceil (up) or floor of a / b, failing where rbin's X_DIV does (a zero or
 * unrepresentable divisor, a sign fix-up that overflows). */
static bool idiv(int64_t a, int64_t b, bool up, int64_t *o)
{
    if (b == 0)
        return false;
    if (b < 0) {
        if (a == INT64_MIN || b == INT64_MIN)
            return false;
        a = -a;
        b = -b;
    }
    int64_t q = a / b;
    if (a % b != 0 && (up ? a > 0 : a < 0))
        q += up ? 1 : -1;
    *o = q;
    return true;
}

/* rbin on integers: the same results and the same failures. */
static bool ibin(int op, int64_t a, int64_t b, int64_t *o)
{
    int64_t q;
    switch (op) {
    case X_SUB:
        return b != INT64_MIN && !__builtin_add_overflow(a, -b, o);
    case X_ADD: return !__builtin_add_overflow(a, b, o);
    case X_MUL: return !__builtin_mul_overflow(a, b, o);
    case X_MOD: /* a - b * floor(a / b) */
        return idiv(a, b, false, &q) && !__builtin_mul_overflow(b, q, &q) && ibin(X_SUB, a, q, o);
    case X_MIN: *o = a <= b ? a : b; return true;
    case X_MAX: *o = a <= b ? b : a; return true;
    case X_LT: *o = a < b; return true;
    case X_LE: *o = a <= b; return true;
    case X_GT: *o = a > b; return true;
    case X_GE: *o = a >= b; return true;
    case X_EQ: *o = a == b; return true;
    default: *o = a != b; return true; /* X_NE */
    }
}

/* xeval of integral code: a quotient is taken with the ceil or floor after
 * it (integral()), which is skipped; a ceil or floor alone has an integer. */
static bool ieval(const tgt_expr *e, const int64_t *fields, const int64_t *params, xrat *out)
{
    int64_t st[XMAX_STACK];
    int sp = 0;
    for (int pc = 0; pc < e->ncode; pc++) {
        const xins *in = &e->code[pc];
        switch (in->op) {
        case X_NUM: st[sp++] = in->n; break;
        case X_FIELD: st[sp++] = fields[in->n]; break;
        case X_PARAM: st[sp++] = params[in->n]; break;
        case X_NEG:
            if (st[sp - 1] == INT64_MIN)
                return false;
            st[sp - 1] = -st[sp - 1];
            break;
        case X_NOT: st[sp - 1] = st[sp - 1] == 0; break;
        case X_BOOL: st[sp - 1] = st[sp - 1] != 0; break;
        case X_CEIL: case X_FLOOR: break;
        case X_JZ: case X_JNZ: pc = branch(in, pc, st[--sp] != 0); break;
        case X_JMP: pc = (int)in->n - 1; break;
        case X_DIV:
            sp--;
            if (!idiv(st[sp - 1], st[sp], e->code[++pc].op == X_CEIL, &st[sp - 1]))
                return false;
            break;
        default:
            sp--;
            if (!ibin(in->op, st[sp - 1], st[sp], &st[sp - 1]))
                return false;
            break;
        }
    }
    *out = (xrat){st[0], 1};
    return true;
}

bool xeval(const tgt_expr *e, const int64_t *fields, const int64_t *params, xrat *out)
{
    if (e->integral)
        return ieval(e, fields, params, out);
    xrat st[XMAX_STACK];
    int sp = 0;
    for (int pc = 0; pc < e->ncode; pc++) {
        const xins *in = &e->code[pc];
        switch (in->op) {
        case X_NUM: st[sp++] = (xrat){in->n, in->d}; break;
        case X_FIELD: st[sp++] = (xrat){fields[in->n], 1}; break;
        case X_PARAM: st[sp++] = (xrat){params[in->n], 1}; break;
        case X_NEG: case X_NOT: case X_CEIL: case X_FLOOR: case X_BOOL:
            if (!run(in->op, st[sp - 1], &st[sp - 1]))
                return false;
            break;
        case X_JZ: case X_JNZ: pc = branch(in, pc, st[--sp].n != 0); break;
        case X_JMP: pc = (int)in->n - 1; break;
        default:
            sp--;
            if (!rbin(in->op, st[sp - 1], st[sp], &st[sp - 1]))
                return false;
            break;
        }
    }
    *out = st[0];
    return true;
}

/* ---- canonical form ---------------------------------------------------------------------- */

void xcanon(const xnode *n, const xcanon_names *names, hsh *h)
{
    switch (n->op) {
    case X_NUM: hsh_printf(h, "%lld", (long long)n->val); return;
    case X_FIELD: hsh_printf(h, "%s", names->field(n->val)); return;
    case X_PARAM: hsh_printf(h, "$%s", names->param(n->val)); return;
    default:
        hsh_printf(h, "%s(", op_names[n->op]);
        xcanon(n->a, names, h);
        if (n->b) {
            hsh_printf(h, ",");
            xcanon(n->b, names, h);
        }
        if (n->c) {
            hsh_printf(h, ",");
            xcanon(n->c, names, h);
        }
        hsh_printf(h, ")");
    }
}
