/* A nesting cap for YAML, checked on the parser's events before libyaml
 * builds a document tree: 150k nested '[' kept yaml_parser_load busy for
 * minutes, and the file-size cap does not bound nesting. */
#ifndef NPU_YAML_DEPTH_H
#define NPU_YAML_DEPTH_H

#include <stddef.h>

#include "common/status.h"

#define NPU_YAML_MAX_DEPTH 64

/* NPU_OK when text nests mappings and sequences at most NPU_YAML_MAX_DEPTH
 * deep; else an error "file:line:col: ..." naming the limit. A syntax error
 * found on the way is left to the loader (NPU_OK), which reports it. */
npu_status npu_yaml_check_depth(const char *file, const char *text, size_t len, npu_err *err);

#endif
