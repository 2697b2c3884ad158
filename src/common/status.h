/* Status codes and error messages shared by every library module.
 * Library code never exits: it fills an npu_err and returns its code;
 * only each tool's main() turns the code into an exit status. */
#ifndef NPU_STATUS_H
#define NPU_STATUS_H

#include <stddef.h>

/* Values double as the tools' exit codes (see docs/cli.md). */
typedef enum npu_status {
    NPU_OK = 0,
    NPU_EUSER = 1,     /* bad input, unsupported model or target */
    NPU_EUSAGE = 2,    /* bad command line */
    NPU_EINTERNAL = 3, /* a bug or resource failure (out of memory) */
} npu_status;

typedef struct npu_err {
    npu_status code;
    char msg[1024];
} npu_err;

/* Formats the message into err (if non-NULL) and returns code, so that
 * callers can write `return npu_fail(err, NPU_EUSER, "%s: ...", file);`. */
npu_status npu_fail(npu_err *err, npu_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prepends "prefix: " to an existing message (adds context while unwinding). */
npu_status npu_err_prefix(npu_err *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

void npu_err_clear(npu_err *err);

#endif
