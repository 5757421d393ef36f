/* mem_python.c - Python frames (file, function, line) of the allocating thread, via the CPython C API. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "collector.h"
#include "mem.h"

/*
 * Why this is safe on the allocation path: we only walk frames when PyGILState_Check() says
 * the calling thread holds the GIL, i.e. it is running Python code that called into native
 * code (ctypes, an extension) which allocated. Holding the GIL makes every C-API call below
 * legal. Frame walking (PyEval_GetFrame, PyFrame_GetBack/GetCode/GetLineNumber) is cheap.
 * The only costly step, reading co_filename/co_qualname by attribute, runs once per code
 * object: the result is cached per thread in a small direct-mapped table that holds a
 * reference to the code object, so the cached UTF-8 pointers (owned by the code object's
 * strings) stay valid.
 */

typedef void PyObj;
static struct {
    int (*gil_check)(void);
    PyObj *(*this_tstate)(void);  /* PyGILState_GetThisThreadState */
    PyObj *(*cur_tstate)(void);   /* the thread state holding the GIL, unchecked (may be NULL) */
    int (*is_initialized)(void);
    PyObj *(*get_frame)(void);
    PyObj *(*frame_code)(PyObj *);
    PyObj *(*frame_back)(PyObj *);
    int (*frame_line)(PyObj *);
    PyObj *(*getattr)(PyObj *, const char *);
    const char *(*utf8)(PyObj *);
    void (*incref)(PyObj *);
    void (*decref)(PyObj *);
    void (*err_clear)(void);
    int ok;
} py;

void pa_mem_python_init(void)
{
    void *h = RTLD_DEFAULT;
#define PA_PY_SYM(field, name) (*(void **)&py.field = dlsym(h, name))
    if (!PA_PY_SYM(gil_check, "PyGILState_Check"))
        return; /* no CPython in the process */
    PA_PY_SYM(is_initialized, "Py_IsInitialized");
    PA_PY_SYM(this_tstate, "PyGILState_GetThisThreadState");
    if (!PA_PY_SYM(cur_tstate, "PyThreadState_GetUnchecked")) /* 3.13+ */
        PA_PY_SYM(cur_tstate, "_PyThreadState_UncheckedGet");

    PA_PY_SYM(get_frame, "PyEval_GetFrame");
    PA_PY_SYM(frame_code, "PyFrame_GetCode");
    PA_PY_SYM(frame_back, "PyFrame_GetBack");
    PA_PY_SYM(frame_line, "PyFrame_GetLineNumber");
    PA_PY_SYM(getattr, "PyObject_GetAttrString");
    PA_PY_SYM(utf8, "PyUnicode_AsUTF8");
    PA_PY_SYM(incref, "Py_IncRef");
    PA_PY_SYM(decref, "Py_DecRef");
    PA_PY_SYM(err_clear, "PyErr_Clear");
#undef PA_PY_SYM
    py.ok = py.is_initialized && py.get_frame && py.frame_code && py.frame_back && py.frame_line &&
            py.getattr && py.utf8 && py.incref && py.decref && py.err_clear;
}

#define PY_CACHE 16 /* small: the whole TLS block must fit glibc's static-TLS surplus when the agent is dlopen()ed */
#define PY_MAX_FRAMES 64 /* = what the symbolizer parses (agg/agg_mem_sym.c) */
typedef struct py_names { PyObj *code; const char *file, *func; } py_names_t;
static __thread py_names_t py_cache[PY_CACHE] __attribute__((tls_model("initial-exec")));

static const char *py_attr_utf8(PyObj *code, const char *attr)
{
    PyObj *s = py.getattr(code, attr);
    if (!s) {
        py.err_clear();
        return "?";
    }
    const char *u = py.utf8(s);
    if (!u)
        py.err_clear();
    py.decref(s); /* still referenced by the code object, which the cache keeps alive */
    return u ? u : "?";
}

static const py_names_t *py_names(PyObj *code)
{
    py_names_t *e = &py_cache[((uintptr_t)code >> 4) % PY_CACHE];
    if (e->code == code)
        return e;
    if (e->code)
        py.decref(e->code);
    py.incref(code);
    e->code = code;
    e->file = py_attr_utf8(code, "co_filename");
    e->func = py_attr_utf8(code, "co_qualname");
    if (e->func[0] == '?')
        e->func = py_attr_utf8(code, "co_name"); /* before 3.11 */
    return e;
}

/* PyGILState_Check() alone answers 1 when its checking is disabled (sub-interpreters): also
 * require that this thread's state is the one currently running. */
static int py_gil_held(void)
{
    if (py.gil_check() != 1)
        return 0;
    if (!py.this_tstate || !py.cur_tstate)
        return 1;
    PyObj *mine = py.this_tstate();
    return mine != NULL && py.cur_tstate() == mine;
}

/* Frames beyond the kept ones are only counted, up to this bound (a runaway recursion). */
#define PY_COUNT_MAX 100000u

uint32_t pa_mem_python_capture(char *buf, uint32_t cap, uint32_t *nframes, uint32_t *omitted)
{
    *nframes = 0;
    *omitted = 0;
    if (!py.ok || !py.is_initialized() || !py_gil_held())
        return 0;
    PyObj *f = py.get_frame(); /* borrowed */
    if (!f)
        return 0;
    py.incref(f);
    uint32_t used = 0, n = 0, more = 0;
    uint32_t lim = pa_config.callstack_depth < PY_MAX_FRAMES ? (uint32_t)pa_config.callstack_depth : PY_MAX_FRAMES;
    while (f && n < lim) {
        PyObj *code = py.frame_code(f);
        int line = py.frame_line(f);
        if (code) {
            const py_names_t *nm = py_names(code);
            int w = snprintf(buf + used, cap - used, "%s\x1f%s\x1f%d\n", nm->file, nm->func, line);
            py.decref(code);
            if (w < 0 || (uint32_t)w >= cap - used) {
                buf[used] = '\0';
                break; /* no room: keep the innermost frames we have */
            }
            used += (uint32_t)w;
            n++;
        }
        PyObj *back = py.frame_back(f);
        py.decref(f);
        f = back;
    }
    while (f && more < PY_COUNT_MAX) { /* the outer frames not kept: counted for the marker */
        more++;
        PyObj *back = py.frame_back(f);
        py.decref(f);
        f = back;
    }
    if (f)
        py.decref(f);
    *nframes = n;
    *omitted = more;
    return used;
}
