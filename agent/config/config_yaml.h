/* YAML text to a cJSON tree, the way mini-swe-agent reads its configs:
 * PyYAML's yaml.safe_load (YAML 1.1 scalar resolution) on a single
 * document, then the tree as JSON would hold it.
 *
 * Scanning and parsing is libyaml's; what this adds is PyYAML's SafeLoader
 * on top of the events:
 *   - plain scalars resolve as YAML 1.1 does: null (~, null, empty), bool
 *     (true/false, yes/no, on/off in three spellings), int (decimal, 0b, 0x,
 *     0-prefixed octal, base 60 like 1:30, underscores), float (1., .5,
 *     1.5e+3 (the exponent needs a sign), .inf, .nan, base 60), merge <<;
 *     quoted and block scalars are always strings; `!` resolves like a plain
 *     scalar (PyYAML does), explicit !!str/!!int/!!float/!!bool/!!null/
 *     !!seq/!!map convert as PyYAML does;
 *   - anchors and aliases (an alias expands to a copy), merge keys `<<`
 *     (explicit keys win; of several merged mappings the first wins);
 *   - a duplicate anchor, an undefined alias, more than one document, an
 *     unknown tag are errors, as in PyYAML.
 * Stricter than PyYAML, because a JSON tree cannot hold the result or
 * because a config should not: mapping keys must be strings; a key may not
 * repeat within one mapping (PyYAML keeps the last); timestamps, !!binary,
 * !!set, !!omap, !!pairs, recursive structures and strings containing NUL
 * are errors.  Integers are held as doubles (exact up to 2^53).
 *
 * Limits: MINI_YAML_MAX_DEPTH levels of nesting, MINI_YAML_MAX_VALUES
 * values and MINI_YAML_MAX_STRING_BYTES bytes of strings after expanding
 * aliases (an "alias bomb" is an error, not an allocation storm). */
#ifndef MINI_AGENT_CONFIG_YAML_H
#define MINI_AGENT_CONFIG_YAML_H

#include <stddef.h>
#include <cjson/cJSON.h>
#include "mini/err.h"

#define MINI_YAML_MAX_DEPTH 512
#define MINI_YAML_MAX_VALUES 200000
#define MINI_YAML_MAX_STRING_BYTES (64u << 20)

/* Parse text[0..len) (UTF-8; need not be NUL-terminated) as one YAML
 * document.  An empty stream or a document holding nothing gives a cJSON
 * null, as safe_load gives None.  `name` (a file name, or NULL) starts
 * error messages: "NAME:LINE:COLUMN: problem".  NULL with e filled
 * (MINI_E_CONFIG, or MINI_E_NOMEM). */
cJSON *mini_yaml_parse(const char *text, size_t len, const char *name, struct mini_err *e);

#endif
