/* The device selector's rules (see device_match.h). */
#include "backend/device_match.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"

static int contains_nocase(const char *haystack, const char *needle)
{
    size_t hn = strlen(haystack), nn = strlen(needle);
    for (size_t i = 0; i + nn <= hn; i++) {
        size_t j = 0;
        while (j < nn && tolower((unsigned char)haystack[i + j]) == tolower((unsigned char)needle[j]))
            j++;
        if (j == nn) return 1;
    }
    return 0;
}

static int all_digits(const char *s)
{
    if (!*s) return 0;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s)) return 0;
    return 1;
}

int tt_device_rank(const tt_device_info *d)
{
    if (strcmp(d->type, "GPU") != 0) return 1;
    return d->integrated ? 2 : 3;
}

/* Whether a ranks above b: rank, then memory. */
static int above(const tt_device_info *a, const tt_device_info *b)
{
    int ra = tt_device_rank(a), rb = tt_device_rank(b);
    return ra != rb ? ra > rb : a->global_mem_bytes > b->global_mem_bytes;
}

int tt_device_default(const tt_device_info *list, int n)
{
    int best = n > 0 ? 0 : -1;
    for (int i = 1; i < n; i++)
        if (above(&list[i], &list[best])) best = i;
    return best;
}

int tt_device_default_better(const tt_device_info *a, int na, const tt_device_info *b, int nb)
{
    int ia = tt_device_default(a, na), ib = tt_device_default(b, nb);
    if (ia < 0) return 0;
    if (ib < 0) return 1;
    int ra = tt_device_rank(&a[ia]), rb = tt_device_rank(&b[ib]);
    if (ra != rb) return ra > rb;
    return ra > 1 && a[ia].global_mem_bytes > b[ib].global_mem_bytes; /* GPUs: the bigger */
}

int tt_device_match(const tt_device_info *list, int n, const char *selector, int match_driver)
{
    if (!selector || !*selector) return tt_device_default(list, n);
    if (all_digits(selector)) {
        long v = strtol(selector, NULL, 10);
        return v < n ? (int)v : -1;
    }
    for (int i = 0; i < n; i++) {
        const tt_device_info *d = &list[i];
        if (contains_nocase(d->name, selector) || contains_nocase(d->vendor, selector) ||
            contains_nocase(d->platform, selector) ||
            contains_nocase(d->platform_version, selector) ||
            contains_nocase(d->device_version, selector) ||
            (match_driver && contains_nocase(d->driver_version, selector)))
            return i;
    }
    return -1;
}

tt_status tt_device_match_error(const tt_device_info *list, int n, const char *from,
                                const char *selector, const char *api)
{
    char have[2048] = "";
    size_t len = 0;
    for (int i = 0; i < n && len < sizeof have; i++)
        len += (size_t)snprintf(have + len, sizeof have - len, "%s%d: %s (%s)", i ? "; " : "", i,
                                list[i].name, list[i].platform);
    return tt_error_new(TT_ERR_NO_DEVICE,
                        "%s '%s' matches no %s device; give an index or part of a name; the "
                        "devices are: %s",
                        from, selector, api, have);
}
