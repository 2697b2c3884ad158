#include "common/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

npu_status npu_fail(npu_err *err, npu_status code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

npu_status npu_err_prefix(npu_err *err, const char *fmt, ...)
{
    if (!err)
        return NPU_EINTERNAL;
    char prefix[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    /* shift the old message right, then write the prefix in front */
    size_t plen = strlen(prefix), cap = sizeof err->msg;
    if (plen + 2 >= cap)
        plen = cap - 3;
    size_t olen = strnlen(err->msg, cap - 1);
    if (plen + 2 + olen >= cap)
        olen = cap - 1 - plen - 2;
    memmove(err->msg + plen + 2, err->msg, olen);
    memcpy(err->msg, prefix, plen);
    err->msg[plen] = ':';
    err->msg[plen + 1] = ' ';
    err->msg[plen + 2 + olen] = '\0';
    return err->code;
}

void npu_err_clear(npu_err *err)
{
    if (err) {
        err->code = NPU_OK;
        err->msg[0] = '\0';
    }
}
