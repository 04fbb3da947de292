/* FNV-1a, 64 bits: a fast hash for in-memory signatures (not for anything
 * an attacker could choose to collide, nor stored across versions). */
#ifndef MINI_HASH_H
#define MINI_HASH_H

#include <stddef.h>
#include <stdint.h>

#define MINI_FNV1A_INIT 14695981039346656037ULL

/* h (MINI_FNV1A_INIT to start) extended by the n bytes at p. */
static inline uint64_t mini_fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

#endif
