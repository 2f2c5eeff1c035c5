/* emsort: the normalised form of a `sort -g` key, from the C library's
   strtold, so that emsort reads numbers exactly as GNU sort does
   (hexadecimal floats, inf, nan, long double precision and rounding).

   Form (see crates/sort/src/keys/mod.rs):
     00                      not a number (strtold read nothing)
     01 + raw bytes          NaN: GNU orders NaNs by memcmp of the value
     02 00 + 20 bytes, inverted   negative
     02 01                   zero (-0 == +0)
     02 02 + 20 bytes        positive: biased binary exponent (4 bytes,
                             big-endian), then 128 mantissa bits
   Returns the form's length (at most 34 bytes). */

#define _GNU_SOURCE
#include <float.h>
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* strtold on TEXT (LEN bytes, read up to its first NUL) into *X, in
   locale LOC (strtold_l) or, when LOC is null, the process's (strtold);
   returns how many bytes it read, 0 when none. */
static size_t read_number (char const *text, size_t len, long double *x,
                           locale_t loc)
{
  char stack[256];
  char *s = len < sizeof stack ? stack : malloc (len + 1);
  if (!s)
    abort ();
  memcpy (s, text, len);
  s[len] = '\0';
  char *end;
  *x = loc ? strtold_l (s, &end, loc) : strtold (s, &end);
  size_t n = end - s;
  if (s != stack)
    free (s);
  return n;
}

size_t emsort_general_form (char const *text, size_t len, unsigned char *out,
                            locale_t loc)
{
  long double x;
  int none = read_number (text, len, &x, loc) == 0;
  if (none)
    {
      out[0] = 0;
      return 1;
    }
  if (isnan (x))
    {
      /* GNU sort 9.1 zeroes a long double, stores strtold's NaN in it and
         memcmp's the bytes.  Only the format's own bytes are copied here:
         storing x86's 80-bit long double writes 10 of its 16 bytes, and a
         compiler may drop a memset before a store to the whole object, so
         the rest would be whatever the stack held (two reads of one "nan"
         then differed).  The padding is written as the zeros GNU meant. */
      size_t bytes = LDBL_MANT_DIG == 64 ? 10 : sizeof x;
      out[0] = 1;
      memcpy (out + 1, &x, bytes);
      memset (out + 1 + bytes, 0, sizeof x - bytes);
      return 1 + sizeof x;
    }
  out[0] = 2;
  if (x == 0)
    {
      out[1] = 1;
      return 2;
    }
  int neg = x < 0;
  long double m = neg ? -x : x;
  uint32_t e;
  uint32_t words[4] = { 0, 0, 0, 0 };
  if (isinf (m))
    e = UINT32_MAX;
  else
    {
      int exp;
      m = frexpl (m, &exp); /* m in [0.5, 1) */
      e = (uint32_t) exp + 0x80000000u;
      for (int i = 0; i < 4; i++)
        {
          m = ldexpl (m, 32);
          uint32_t w = (uint32_t) m;
          words[i] = w;
          m -= w;
        }
    }
  unsigned char *p = out + 2;
  for (int i = 0; i < 4; i++)
    *p++ = e >> (24 - 8 * i);
  for (int w = 0; w < 4; w++)
    for (int i = 0; i < 4; i++)
      *p++ = words[w] >> (24 - 8 * i);
  out[1] = neg ? 0 : 2;
  if (neg)
    for (unsigned char *q = out + 2; q < p; q++)
      *q = ~*q;
  return p - out;
}

/* emsort: how many bytes of TEXT (LEN bytes, read up to its first NUL)
   strtold reads as a number, 0 when none: where GNU sort --debug ends the
   underline of a -g key. */
size_t emsort_general_len (char const *text, size_t len, locale_t loc)
{
  long double x;
  return read_number (text, len, &x, loc);
}
