/* spine_names.c - range names with CSV/JSON-hostile bytes, an empty one and a 100 KB one. */
#include <stdlib.h>
#include <string.h>

#include <profagent/hgtx.h>

int main(void)
{
    static const char *const names[] = {
        "quote\"in", "comma,in", "new\nline", "tab\tin", "back\\slash", "ff\xff" "byte", "",
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        hgtxRangePushA(names[i]);
        hgtxRangePop();
    }
    size_t big = 100 * 1024;
    char *s = malloc(big + 1);
    for (size_t i = 0; i < big; i++)
        s[i] = (char)('a' + i % 26);
    s[big] = '\0';
    hgtxRangePushA(s);
    memset(s, 'x', big); /* the agent copied the name at the call */
    hgtxRangePop();
    hgtxRangePushA(NULL); /* NULL is recorded as "" */
    hgtxRangePop();
    free(s);
    return 0;
}
