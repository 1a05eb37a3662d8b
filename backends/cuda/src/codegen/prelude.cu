// tessera CUDA prelude: the scalar definitions every generated kernel uses.
//
// Each function transcribes the one definition in tessera-core (program/ops.rs,
// dtype.rs's casts, random/) so that a kernel computes what the CPU backend computes.
// It includes no header: NVRTC's built-in math functions and intrinsics are all it
// needs, and on the host the shim header supplies the same names, so this text also
// compiles as C++ and can be checked bit for bit against the CPU backend without a GPU.
// Integer arithmetic goes through unsigned 64-bit values (wrapping is defined there; a
// signed overflow is not), and float-to-integer casts saturate as Rust's `as` does.

typedef signed char i8;
typedef short i16;
typedef int i32;
typedef long long i64;
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef float f32;
typedef double f64;
typedef unsigned char b8;
typedef __int128 i128;
typedef unsigned __int128 u128;

#define TSR_D static __device__ __forceinline__

// ---- bits ----
TSR_D f64 tsr_f64_of(u64 b) { return __longlong_as_double((i64)b); }
TSR_D u64 tsr_bits_f64(f64 x) { return (u64)__double_as_longlong(x); }

// ---- casts (Scalar::cast) ----
TSR_D i64 tsr_sat_i64(f64 v) {
    if (v != v) return 0;
    if (v >= 9223372036854775808.0) return (i64)0x7fffffffffffffffULL;
    if (v <= -9223372036854775808.0) return (i64)0x8000000000000000ULL;
    return (i64)v;
}
TSR_D u64 tsr_sat_u64(f64 v) {
    if (v != v) return 0;
    if (v < 0.0) return (u64)tsr_sat_i64(v);
    if (v >= 18446744073709551616.0) return 0xffffffffffffffffULL;
    return (u64)v;
}

// ---- integer ops (BinaryOp::apply_i64 / apply_u64) ----
TSR_D i64 tsr_idiv(i64 a, i64 b) {
    if (b == 0) return 0;
    if (b == -1) return (i64)(0ULL - (u64)a);
    i64 q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
    return q;
}
TSR_D i64 tsr_irem(i64 a, i64 b) {
    if (b == 0 || b == -1) return 0;
    i64 r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}
TSR_D i64 tsr_ipow(i64 a, i64 b) {
    if (b < 0) {
        if (a == 1) return 1;
        if (a == -1) return (b % 2 == 0) ? 1 : -1;
        return 0;
    }
    u64 base = (u64)a, e = (u64)b, acc = 1;
    while (e > 0) {
        if (e & 1) acc *= base;
        base *= base;
        e >>= 1;
    }
    return (i64)acc;
}
TSR_D u64 tsr_udiv(u64 a, u64 b) { return b == 0 ? 0 : a / b; }
TSR_D u64 tsr_urem(u64 a, u64 b) { return b == 0 ? 0 : a % b; }
TSR_D u64 tsr_upow(u64 a, u64 b) {
    u64 base = a, e = b, acc = 1;
    while (e > 0) {
        if (e & 1) acc *= base;
        base *= base;
        e >>= 1;
    }
    return acc;
}

// ---- float ops (py_fmod_f64, py_floor_div_f64/f32, NaN-propagating min/max) ----
TSR_D f64 tsr_fmod(f64 a, f64 b) {
    f64 r = fmod(a, b);
    if (r != 0.0 && ((r < 0.0) != (b < 0.0))) return r + b;
    if (r == 0.0) return copysign(0.0, b);
    return r;
}
TSR_D f64 tsr_floordiv(f64 a, f64 b) {
    if (b == 0.0) return a / b;
    f64 m = fmod(a, b);
    f64 div = (a - m) / b;
    if (m != 0.0 && ((b < 0.0) != (m < 0.0))) div -= 1.0;
    if (div != 0.0) {
        f64 f = floor(div);
        return (div - f > 0.5) ? f + 1.0 : f;
    }
    return copysign(0.0, a / b);
}
TSR_D f32 tsr_floordivf(f32 a, f32 b) {
    if (b == 0.0f) return a / b;
    f32 m = fmodf(a, b);
    f32 div = (a - m) / b;
    if (m != 0.0f && ((b < 0.0f) != (m < 0.0f))) div -= 1.0f;
    if (div != 0.0f) {
        f32 f = floorf(div);
        return (div - f > 0.5f) ? f + 1.0f : f;
    }
    return copysignf(0.0f, a / b);
}
TSR_D f64 tsr_fmax(f64 a, f64 b) { return (a != a || b != b) ? a + b : (a > b ? a : b); }
TSR_D f64 tsr_fmin(f64 a, f64 b) { return (a != a || b != b) ? a + b : (a < b ? a : b); }
TSR_D f32 tsr_fmaxf(f32 a, f32 b) { return (f32)tsr_fmax((f64)a, (f64)b); }
TSR_D f32 tsr_fminf(f32 a, f32 b) { return (f32)tsr_fmin((f64)a, (f64)b); }
TSR_D b8 tsr_isfinite(f64 x) { return (x - x) == 0.0; }

// ---- logaddexp (logaddexp_f64/f32 in ops.rs, NumPy's npy_logaddexp) ----
TSR_D f64 tsr_logaddexp(f64 a, f64 b) {
    if (a == b) return a + 0.6931471805599453;
    f64 d = a - b;
    if (d > 0.0) return a + log1p(exp(-d));
    if (d <= 0.0) return b + log1p(exp(d));
    return d;
}
TSR_D f32 tsr_logaddexpf(f32 a, f32 b) {
    if (a == b) return a + 0.6931471805599453f;
    f32 d = a - b;
    if (d > 0.0f) return a + log1pf(expf(-d));
    if (d <= 0.0f) return b + log1pf(expf(d));
    return d;
}

// ---- shifts (BinaryOp::LeftShift/RightShift in ops.rs): counts outside 0..64 ----
TSR_D i64 tsr_ishl(i64 a, i64 b) { return (b >= 0 && b < 64) ? (i64)((u64)a << b) : 0; }
TSR_D i64 tsr_ishr(i64 a, i64 b) { return (b >= 0 && b < 64) ? (a >> b) : (a < 0 ? -1 : 0); }
TSR_D u64 tsr_ushl(u64 a, u64 b) { return b < 64 ? a << b : 0; }
TSR_D u64 tsr_ushr(u64 a, u64 b) { return b < 64 ? a >> b : 0; }

// ---- inverse hyperbolic functions (asinh_f64, acosh_f64, atanh_f64 in ops.rs) ----
TSR_D f64 tsr_asinh(f64 x) {
    f64 a = fabs(x);
    if (a != a || a - a != 0.0) return x;
    f64 r = a >= 268435456.0 ? log(a) + 0.6931471805599453
                             : log1p(a + a * a / (1.0 + sqrt(a * a + 1.0)));
    return copysign(r, x);
}
TSR_D f64 tsr_acosh(f64 x) {
    if (x != x || x < 1.0) return tsr_f64_of(0x7ff8000000000000ULL);
    if (x >= 268435456.0) return x - x != 0.0 ? x : log(x) + 0.6931471805599453;
    f64 t = x - 1.0;
    return log1p(t + sqrt(t * (t + 2.0)));
}
TSR_D f64 tsr_atanh(f64 x) {
    f64 a = fabs(x);
    return copysign(0.5 * log1p((2.0 * a) / (1.0 - a)), x);
}

// ---- Philox 4x32-10 and the element layout (random/philox.rs) ----
struct tsr_u4 { u32 x, y, z, w; };
TSR_D tsr_u4 tsr_philox(u32 c0, u32 c1, u32 c2, u32 c3, u32 k0, u32 k1) {
    for (int round = 0; round < 10; ++round) {
        if (round > 0) { k0 += 0x9E3779B9u; k1 += 0xBB67AE85u; }
        u32 hi0 = __umulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
        u32 hi1 = __umulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
    }
    tsr_u4 r = {c0, c1, c2, c3};
    return r;
}
TSR_D u64 tsr_first_word(u64 seed, u64 stream, u64 index) {
    u64 block = ((index >> 1) & ~1ULL) | (index & 1ULL);
    tsr_u4 r = tsr_philox((u32)block, (u32)(block >> 32), (u32)stream, (u32)(stream >> 32),
                          (u32)seed, (u32)(seed >> 32));
    return ((index >> 1) & 1ULL) ? ((u64)r.z | ((u64)r.w << 32)) : ((u64)r.x | ((u64)r.y << 32));
}
TSR_D f64 tsr_unit_f64(u64 w) { return (f64)(i64)(w >> 11) * (1.0 / 9007199254740992.0); }
TSR_D f32 tsr_unit_f32(u32 w) { return (f32)(i32)(w >> 8) * (1.0f / 16777216.0f); }

// ---- portable ln / exp (random/math.rs, fdlibm) ----
TSR_D f64 tsr_ln_positive(f64 u) {
    u64 bits = tsr_bits_f64(u);
    f64 e = (f64)((i64)(bits >> 52) - 1023);
    f64 m = tsr_f64_of((bits & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL);
    bool big = m > tsr_f64_of(0x3ff6a09e667f3bcdULL);
    m = big ? m * 0.5 : m;
    e += big ? 1.0 : 0.0;
    f64 f = m - 1.0;
    f64 s = f / (2.0 + f);
    f64 z = s * s;
    f64 w = z * z;
    f64 t1 = w * (tsr_f64_of(0x3fd999999997fa04ULL) + w * (tsr_f64_of(0x3fcc71c51d8e78afULL) + w * tsr_f64_of(0x3fc39a09d078c69fULL)));
    f64 t2 = z * (tsr_f64_of(0x3fe5555555555593ULL) + w * (tsr_f64_of(0x3fd2492494229359ULL) + w * (tsr_f64_of(0x3fc7466496cb03deULL) + w * tsr_f64_of(0x3fc2f112df3e5244ULL))));
    f64 r = t2 + t1;
    f64 hfsq = 0.5 * f * f;
    return e * tsr_f64_of(0x3fe62e42fee00000ULL) - ((hfsq - (s * (hfsq + r) + e * tsr_f64_of(0x3dea39ef35793c76ULL))) - f);
}
TSR_D f64 tsr_exp_nonpositive(f64 x) {
    i64 ki = (i64)(x * tsr_f64_of(0x3ff71547652b82feULL) - 0.5);
    f64 k = (f64)ki;
    f64 hi = x - k * tsr_f64_of(0x3fe62e42fee00000ULL);
    f64 lo = k * tsr_f64_of(0x3dea39ef35793c76ULL);
    f64 r = hi - lo;
    f64 t = r * r;
    f64 c = r - t * (tsr_f64_of(0x3fc555555555553eULL) + t * (tsr_f64_of(0xbf66c16c16bebd93ULL) + t * (tsr_f64_of(0x3f11566aaf25de2cULL) + t * (tsr_f64_of(0xbebbbd41c5d26bf1ULL) + t * tsr_f64_of(0x3e66376972bea4d0ULL)))));
    f64 y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi);
    return y * tsr_f64_of((u64)(1023 + ki) << 52);
}

// ---- the ziggurat (random/ziggurat.rs): tables come from the host, bit for bit ----
struct tsr_zig { const f64* wi; const u64* ki; const f64* fi; };
TSR_D f64 tsr_zig_first(const tsr_zig& t, u64 w, bool* accepted) {
    u32 j = (u32)(w & 0x3ff);
    u64 rabs = w >> 12;
    f64 x = (f64)(i64)rabs * t.wi[j];
    *accepted = rabs < t.ki[j];
    return tsr_f64_of(tsr_bits_f64(x) ^ ((w & 0x400ULL) << 53));
}
TSR_D f64 tsr_density(f64 x) { return tsr_exp_nonpositive(-0.5 * x * x); }
// The words of one element after its first: blocks 1, 2, ... of counter
// [index, stream ^ (block << 56)], two words each; 0 once 256 blocks are used.
struct tsr_words {
    u32 c0, c1, c2, c3, k0, k1;
    u32 block;
    u64 buf0, buf1;
    int next;
};
TSR_D bool tsr_next_word(tsr_words& s, u64* out) {
    if (s.next == 2) {
        if (s.block == 256) return false;
        tsr_u4 r = tsr_philox(s.c0, s.c1, s.c2, s.c3 ^ (s.block << 24), s.k0, s.k1);
        s.block += 1;
        s.buf0 = (u64)r.x | ((u64)r.y << 32);
        s.buf1 = (u64)r.z | ((u64)r.w << 32);
        s.next = 0;
    }
    s.next += 1;
    *out = s.next == 1 ? s.buf0 : s.buf1;
    return true;
}
TSR_D f64 tsr_normal(const tsr_zig& t, u64 seed, u64 stream, u64 index) {
    const f64 R = tsr_f64_of(0x401027c84109fad6ULL);
    u64 w = tsr_first_word(seed, stream, index);
    tsr_words s;
    s.c0 = (u32)index; s.c1 = (u32)(index >> 32); s.c2 = (u32)stream; s.c3 = (u32)(stream >> 32);
    s.k0 = (u32)seed; s.k1 = (u32)(seed >> 32);
    s.block = 1; s.buf0 = 0; s.buf1 = w; s.next = 1;
    f64 last = 0.0;
    u64 cur;
    while (tsr_next_word(s, &cur)) {
        bool ok;
        f64 x = tsr_zig_first(t, cur, &ok);
        last = x;
        if (ok) return x;
        u32 j = (u32)(cur & 0x3ff);
        bool negative = (cur & 0x400) != 0;
        if (j == 0) {
            u64 w1, w2;
            if (!tsr_next_word(s, &w1) || !tsr_next_word(s, &w2)) break;
            f64 a = -tsr_ln_positive(1.0 - tsr_unit_f64(w1)) / R;
            f64 b = -tsr_ln_positive(1.0 - tsr_unit_f64(w2));
            if (b + b > a * a) {
                f64 z = R + a;
                return negative ? -z : z;
            }
        } else {
            u64 w1;
            if (!tsr_next_word(s, &w1)) break;
            f64 y = t.fi[j - 1] + tsr_unit_f64(w1) * (t.fi[j] - t.fi[j - 1]);
            if (y < tsr_density(x)) return x;
        }
    }
    return last;
}
TSR_D f64 tsr_uniform_f64(u64 seed, u64 stream, u64 index, f64 low, f64 high) {
    return low + (high - low) * tsr_unit_f64(tsr_first_word(seed, stream, index));
}
TSR_D f32 tsr_uniform_f32(u64 seed, u64 stream, u64 index, f64 low, f64 high) {
    return (f32)low + ((f32)high - (f32)low) * tsr_unit_f32((u32)tsr_first_word(seed, stream, index));
}
TSR_D i64 tsr_randint(u64 seed, u64 stream, u64 index, i64 low, i64 high) {
    u64 range = (u64)high - (u64)low;
    return (i64)((u64)low + __umul64hi(tsr_first_word(seed, stream, index), range));
}

// ---- dataframe columns (Arrow's layout; tessera-cuda's frame kernels) ----
// Bit `i` of an Arrow bitmap (validity, boolean values).
TSR_D u8 tsr_bit(const u8* b, u64 i) { return (u8)((b[i >> 3] >> (i & 7)) & 1); }
// The order of two floats as the dataframe protocol compares them (Arrow's total order
// over canonical values): -0 equals 0, NaN equals NaN and sorts above every number.
TSR_D int tsr_fcmp(f64 a, f64 b) {
    int na = a != a, nb = b != b;
    if (na || nb) return na - nb;
    return (a > b) - (a < b);
}
// Strings as bytes (Arrow's Utf8: compared byte by byte, as arrow's kernels compare them).
TSR_D int tsr_str_cmp(const u8* a, u64 an, const u8* b, u64 bn) {
    u64 m = an < bn ? an : bn;
    for (u64 i = 0; i < m; ++i) {
        if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
    }
    return (an > bn) - (an < bn);
}
TSR_D u8 tsr_str_starts(const u8* a, u64 an, const u8* p, u64 pn) {
    if (pn > an) return 0;
    for (u64 i = 0; i < pn; ++i) if (a[i] != p[i]) return 0;
    return 1;
}
TSR_D u8 tsr_str_ends(const u8* a, u64 an, const u8* p, u64 pn) {
    if (pn > an) return 0;
    for (u64 i = 0; i < pn; ++i) if (a[an - pn + i] != p[i]) return 0;
    return 1;
}
TSR_D u8 tsr_str_contains(const u8* a, u64 an, const u8* p, u64 pn) {
    if (pn > an) return 0;
    for (u64 i = 0; i + pn <= an; ++i) {
        u64 j = 0;
        while (j < pn && a[i + j] == p[j]) ++j;
        if (j == pn) return 1;
    }
    return 0;
}
// Calendar parts (proleptic Gregorian, days since 1970-01-01, floor division for
// instants before the epoch), as arrow's date_part gives them.
TSR_D i64 tsr_floordiv(i64 a, i64 b) { i64 q = a / b; return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q; }
TSR_D i64 tsr_floormod(i64 a, i64 b) { return a - tsr_floordiv(a, b) * b; }
TSR_D void tsr_civil(i64 days, i64* y, i64* m, i64* d) {
    i64 z = days + 719468;
    i64 era = (z >= 0 ? z : z - 146096) / 146097;
    i64 doe = z - era * 146097;
    i64 yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    i64 doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    i64 mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = yoe + era * 400 + (*m <= 2 ? 1 : 0);
}
TSR_D i64 tsr_days_from_civil(i64 y, i64 m, i64 d) {
    y -= m <= 2 ? 1 : 0;
    i64 era = (y >= 0 ? y : y - 399) / 400;
    i64 yoe = y - era * 400;
    i64 doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    i64 doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}
// part: 0 year, 1 month, 2 day, 3 weekday (Monday 0), 4 quarter, 5 day of year.
TSR_D i32 tsr_date_part(i64 days, int part) {
    i64 y, m, d;
    tsr_civil(days, &y, &m, &d);
    switch (part) {
        case 0: return (i32)y;
        case 1: return (i32)m;
        case 2: return (i32)d;
        case 3: return (i32)tsr_floormod(days + 3, 7);
        case 4: return (i32)((m - 1) / 3 + 1);
        default: return (i32)(days - tsr_days_from_civil(y, 1, 1) + 1);
    }
}
// A 64-bit finaliser (MurmurHash3's fmix64): the groupby's key hash.
TSR_D u64 tsr_mix(u64 x) {
    x ^= x >> 33; x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}
// Exact decimals: 128-bit unscaled values, each operation reporting overflow.
TSR_D i128 tsr_p10(int k) { i128 v = 1; for (int i = 0; i < k; ++i) v *= 10; return v; }
TSR_D u8 tsr_add128(i128 a, i128 b, i128* r) {
    *r = (i128)((u128)a + (u128)b);
    return (u8)(((a ^ *r) & (b ^ *r)) < 0);
}
TSR_D u8 tsr_sub128(i128 a, i128 b, i128* r) {
    *r = (i128)((u128)a - (u128)b);
    return (u8)(((a ^ b) & (a ^ *r)) < 0);
}
TSR_D u8 tsr_mul128(i128 a, i128 b, i128* r) {
    u128 ua = a < 0 ? (u128)0 - (u128)a : (u128)a;
    u128 ub = b < 0 ? (u128)0 - (u128)b : (u128)b;
    int neg = (a < 0) != (b < 0);
    u128 top = (u128)1 << 127;
    if (ua != 0 && ub > top / ua) { *r = 0; return 1; }
    u128 m = ua * ub;
    *r = neg ? (i128)((u128)0 - m) : (i128)m;
    return (u8)(m > top - (neg ? 0 : 1));
}
// Whether |v| has at most `digits` digits.
TSR_D u8 tsr_fits(i128 v, int digits) { i128 b = tsr_p10(digits); return (u8)(v < b && v > -b); }
// The first place at or after `from` where `p` occurs in `a` (before `end`), or ~0.
TSR_D u64 tsr_str_find(const u8* a, u64 from, u64 end, const u8* p, u64 pn) {
    for (u64 i = from; i + pn <= end; ++i) {
        u64 j = 0;
        while (j < pn && a[i + j] == p[j]) ++j;
        if (j == pn) return i;
    }
    return ~0ULL;
}
// Floats as unsigned words in the dataframe sort order: NaN (any) above every number,
// -0 equal to 0.
TSR_D u32 tsr_f32_order(f32 x) {
    u32 b = (x != x) ? 0x7fc00000u : (x == 0.0f ? 0u : __float_as_uint(x));
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
TSR_D u64 tsr_f64_order(f64 x) {
    u64 b = (x != x) ? 0x7ff8000000000000ULL : (x == 0.0 ? 0ULL : (u64)__double_as_longlong(x));
    return (b & 0x8000000000000000ULL) ? ~b : (b | 0x8000000000000000ULL);
}
// Block-wide sums and prefix sums through `s`, a shared array of blockDim.x entries; every
// thread of the block calls them (they synchronise the block) and gets the result.
template <typename T> TSR_D T tsr_block_sum(T* s, T v) {
    s[threadIdx.x] = v;
    __syncthreads();
    for (u32 d = blockDim.x / 2; d > 0; d >>= 1) {
        if (threadIdx.x < d) s[threadIdx.x] += s[threadIdx.x + d];
        __syncthreads();
    }
    T r = s[0];
    __syncthreads();
    return r;
}
// The inclusive prefix sum of `v` over the block's threads; `*total` gets the block's sum.
template <typename T> TSR_D T tsr_block_scan(T* s, T v, T* total) {
    s[threadIdx.x] = v;
    __syncthreads();
    for (u32 d = 1; d < blockDim.x; d <<= 1) {
        T x = threadIdx.x >= d ? s[threadIdx.x - d] : 0;
        __syncthreads();
        s[threadIdx.x] += x;
        __syncthreads();
    }
    T r = s[threadIdx.x];
    *total = s[blockDim.x - 1];
    __syncthreads();
    return r;
}
