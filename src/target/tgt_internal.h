/* Internals of src/target shared by its files (not for other modules):
 * YAML node helpers with file:line:col messages, the expression compiler,
 * the canonical-form hasher. */
#ifndef NPU_TGT_INTERNAL_H
#define NPU_TGT_INTERNAL_H

#include <yaml.h>

#include "target/target.h"

/* ---- YAML -------------------------------------------------------------------- */

typedef struct ydoc {
    const char *file;
    yaml_document_t doc;
    bool loaded;
    npu_err *err;
    const char *const *sets; /* the --set PATH=VALUE texts applied (ydoc_apply_sets) */
    int nsets;
} ydoc;

/* Nodes a --set made carry this mark line minus the index of their --set, so
 * that messages about them name the override instead of a file position. */
#define YSET_LINE ((size_t)-1 - 4096)

npu_status ydoc_load(ydoc *y, const char *file, const char *text, size_t len, npu_err *err);
void ydoc_free(ydoc *y);
yaml_node_t *ydoc_root(ydoc *y);
yaml_node_t *ynode(ydoc *y, int id);

/* "file:line:col: <message>" at node n (or the file alone when n is NULL). */
npu_status yfail(ydoc *y, const yaml_node_t *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The same at a column offset inside a one-line scalar (expression errors). */
npu_status yfail_at(ydoc *y, const yaml_node_t *n, size_t offset, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* "12:5" of n */
void ywhere(const ydoc *y, const yaml_node_t *n, char *buf, size_t cap);

/* Checks that n is a mapping whose keys are distinct scalars from allowed
 * (NULL-terminated; NULL allowed means any key). */
npu_status ymap(ydoc *y, yaml_node_t *n, const char *what, const char *const *allowed);
npu_status yseq(ydoc *y, yaml_node_t *n, const char *what);
yaml_node_t *yget(ydoc *y, yaml_node_t *map, const char *key); /* NULL when absent */
yaml_node_t *ykey(ydoc *y, yaml_node_t *map, const char *key); /* the key node itself */
/* The value at key, or an error at the mapping naming the missing key. */
npu_status yreq(ydoc *y, yaml_node_t *map, const char *key, const char *what, yaml_node_t **out);

/* Plain scalars: integers (decimal, 0x, 0b, '_' separators, Ki/Mi/Gi
 * suffix), numbers, true/false; strings may be any scalar. */
npu_status yint(ydoc *y, yaml_node_t *n, const char *what, int64_t *out);
npu_status yint_range(ydoc *y, yaml_node_t *n, const char *what, int64_t lo, int64_t hi, int64_t *out);
npu_status ynum(ydoc *y, yaml_node_t *n, const char *what, double *out);
npu_status ybool(ydoc *y, yaml_node_t *n, const char *what, bool *out);
npu_status ystr(ydoc *y, yaml_node_t *n, const char *what, npu_arena *a, const char **out);
bool yscalar_is(const yaml_node_t *n, const char *s);
/* The integer literal rule of yint on a string. */
bool yparse_int(const char *s, int64_t *out);
/* "--set PATH=VALUE" when n was made by an override, else NULL. */
const char *yset_of(const ydoc *y, const yaml_node_t *n);

/* ---- overrides and the effective description (override.c) ---------------------- */

/* Applies each "PATH=VALUE" (PATH the dotted keys from the root, e.g.
 * npu.mac.cols) to the document: the scalar at PATH is replaced, a missing
 * key added, so the loader then checks the value as it checks the file's. */
npu_status ydoc_apply_sets(ydoc *y, const char *const *sets, int n);
/* The document as JSON (YAML flow, so tgt_parse reads it back): integers in
 * decimal, numbers and true/false plain, other scalars as strings. flat:
 * one object of "a.b.c": leaf for every scalar or list of scalars outside
 * `constraints`. Arena text; NULL when out of memory or too large. */
char *ydoc_json(ydoc *y, npu_arena *a, bool flat);

/* ---- expressions ------------------------------------------------------------------ */

typedef enum xref_kind { XREF_NONE, XREF_FIELD, XREF_PARAM, XREF_CONST } xref_kind;

/* Resolves a name of an expression: a field (index into the value array),
 * a parameter (index into the parameter array) or a constant. */
typedef xref_kind (*xresolve_fn)(void *ud, const char *name, int64_t *index_or_value);

typedef struct xnode xnode;

/* Parses src. On error returns NPU_EUSER with *errpos = byte offset and a
 * message (without place) in msg. */
npu_status xparse(npu_arena *a, const char *src, xresolve_fn resolve, void *ud, xnode **out, size_t *errpos,
                  char *msg, size_t cap);
/* Compiles to the compact form; params non-NULL folds parameters in. */
tgt_expr *xcompile(npu_arena *a, const xnode *root, const int64_t *params);
/* Exact rational evaluation; false on division by zero or overflow. */
typedef struct xrat {
    int64_t n, d; /* d > 0 */
} xrat;
bool xeval(const tgt_expr *e, const int64_t *fields, const int64_t *params, xrat *out);
int64_t xrat_ceil(xrat r);
const xnode *xexpr_root(const tgt_expr *e);
bool xnode_uses_params(const xnode *n);

/* Canonical text of an expression (for hashing); names via the callbacks. */
typedef struct xcanon_names {
    const char *(*field)(int64_t index);
    const char *(*param)(int64_t index);
} xcanon_names;

/* ---- hashing ---------------------------------------------------------------------- */

typedef struct hsh {
    uint64_t h;
} hsh;
void hsh_init(hsh *h);
void hsh_bytes(hsh *h, const void *p, size_t n);
void hsh_printf(hsh *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void xcanon(const xnode *n, const xcanon_names *names, hsh *h);
extern const xcanon_names tgt_canon_names; /* fields and parameters by name */

/* ---- files and the ISA ---------------------------------------------------------------- */

/* Reads a whole file into arena memory (NUL-terminated). */
npu_status tgt_read_file(npu_arena *a, const char *path, char **text, size_t *len, npu_err *err);
/* Looks up NAME.yaml in the search directories for kind "targets" or "isa";
 * base_dir (may be NULL) is tried first, as base_dir/../isa and base_dir. */
npu_status tgt_search(const char *name, const char *kind, const char *base_dir, const tgt_opts *opts, char *path,
                      size_t cap, npu_err *err);
npu_status tgt_isa_parse_in(npu_arena *a, npu_alloc alloc, const char *file, const char *text, size_t len,
                            tgt_isa **out, npu_err *err);
tgt_param tgt_param_from_name(const char *name);
int64_t tgt_param_min(tgt_param p);
/* Resolver for a field of an instruction, then enum values ("region.flash"),
 * then target parameters, then the ISA's constants (may be NULL). */
typedef struct insn_scope {
    const tgt_insn *insn;
    const char *const *cnames;
    const int64_t *cvals;
    int nconst;
} insn_scope;
xref_kind tgt_insn_resolve(void *ud, const char *name, int64_t *out);

#endif
