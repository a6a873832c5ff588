// Shared constants of the arg-min / arg-max reductions.
// Indices travel as floats (exact up to 2^24); NO_INDEX marks "no candidate".
// MODE_MAX (0 or 1) picks arg-max; WORST is the value every candidate beats.
#define ARGBEST_DEFS 1
const float NO_INDEX = 16777216.0;
#if MODE_MAX
const uint WORST_BITS = 0xFF800000u;  // -inf
#else
const uint WORST_BITS = 0x7F800000u;  // +inf
#endif
float worst_value() { return uintBitsToFloat(WORST_BITS); }
