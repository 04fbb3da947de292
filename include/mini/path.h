/* Path helpers shared by the programs: lexical containment and where the
 * running program lives. */
#ifndef MINI_PATH_H
#define MINI_PATH_H

#include <stdbool.h>

/* Whether the absolute path `path` is `dir` or lies beneath it, compared
 * as text ("/" holds every absolute path; "/a" does not hold "/ab").
 * Both must already be normalised: no "//", ".", ".." or trailing "/". */
bool mini_path_within(const char *path, const char *dir);

/* Decode the octal escapes of a /proc/self/mountinfo field (\040 for a
 * space, \011, \012, \134) in place. */
void mini_mountinfo_unescape(char *s);

/* The running program's own path (readlink of /proc/self/exe, any
 * length).  Malloc'ed; NULL with errno set when it cannot be read. */
char *mini_self_exe(void);

/* The path of `name` in the running program's directory, malloc'ed, or
 * NULL with errno set.  It need not exist. */
char *mini_exe_sibling(const char *name);

/* One of the installed files, found relative to the running program's
 * directory: `rel` starts with MINI_BIN_TO_DATA (share/mini) or
 * MINI_BIN_TO_LIBEXEC (libexec/mini) as seen from bin/, for example
 * MINI_BIN_TO_DATA "/profiles".  Malloc'ed, made canonical by realpath
 * when it exists (else as joined), or NULL with errno set.  This is how
 * an install stays relocatable: no absolute path is compiled in. */
char *mini_exe_relative(const char *rel);

#endif
