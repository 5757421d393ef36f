/* pa_export.h - visibility: everything is hidden unless marked PA_EXPORT. */
#ifndef PA_EXPORT_H
#define PA_EXPORT_H
#define PA_EXPORT __attribute__((visibility("default")))
#define PA_LIKELY(x) __builtin_expect(!!(x), 1)
#define PA_UNLIKELY(x) __builtin_expect(!!(x), 0)
#endif
