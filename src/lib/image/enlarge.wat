;; The two passes of enlarge.ts: a Catmull-Rom enlargement of 8-bit RGB in libvips' fixed-point arithmetic
;; (its bicubic interpolator on 8-bit images: 12-bit integer coefficients, each pass rounded to the nearest
;; integer), four values per instruction. Compiled into enlarge-wasm.ts by `npx tsx scripts/wasm.ts`.
;; Addresses are in bytes. A pass reads and writes a few bytes past its last row (enlarge.ts leaves room).
;; Loads are written out in place rather than in helper functions: V8 does not inline WebAssembly calls, and a
;; call per pixel made the row pass four times slower.
(module
  (memory (export "memory") 1)

  ;; Along the rows: $rows rows of RGB bytes from $src, $srcStride bytes apart, into rows of int16 RGB from
  ;; $mid, $midStride bytes apart. Output pixel i of a row reads the table's entry at $table + 32 i: the byte
  ;; offsets in the row of its four source pixels, then their four coefficients (int32). A pixel is computed
  ;; as four lanes (the fourth is the next pixel's red, and its result is written over by the next pixel).
  (func (export "horizontal") (param $src i32) (param $srcStride i32) (param $rows i32) (param $mid i32) (param $midStride i32) (param $table i32) (param $n i32)
    (local $t i32) (local $end i32) (local $o i32) (local $acc v128)
    (local.set $end (i32.add (local.get $table) (i32.shl (local.get $n) (i32.const 5))))
    (block $rows_done (loop $each_row
      (br_if $rows_done (i32.le_s (local.get $rows) (i32.const 0)))
      (local.set $t (local.get $table))
      (local.set $o (local.get $mid))
      (block $done (loop $pixels
        (br_if $done (i32.ge_u (local.get $t) (local.get $end)))
        (local.set $acc (i32x4.add (i32x4.splat (i32.const 2048))
          (i32x4.add
            (i32x4.add
              (i32x4.mul (i32x4.extend_low_i16x8_u (i16x8.extend_low_i8x16_u (v128.load32_zero (i32.add (local.get $src) (i32.load (local.get $t)))))) (i32x4.splat (i32.load offset=16 (local.get $t))))
              (i32x4.mul (i32x4.extend_low_i16x8_u (i16x8.extend_low_i8x16_u (v128.load32_zero (i32.add (local.get $src) (i32.load offset=4 (local.get $t)))))) (i32x4.splat (i32.load offset=20 (local.get $t)))))
            (i32x4.add
              (i32x4.mul (i32x4.extend_low_i16x8_u (i16x8.extend_low_i8x16_u (v128.load32_zero (i32.add (local.get $src) (i32.load offset=8 (local.get $t)))))) (i32x4.splat (i32.load offset=24 (local.get $t))))
              (i32x4.mul (i32x4.extend_low_i16x8_u (i16x8.extend_low_i8x16_u (v128.load32_zero (i32.add (local.get $src) (i32.load offset=12 (local.get $t)))))) (i32x4.splat (i32.load offset=28 (local.get $t))))))))
        (local.set $acc (i32x4.shr_s (local.get $acc) (i32.const 12)))
        (v128.store64_lane 0 (local.get $o) (i16x8.narrow_i32x4_s (local.get $acc) (local.get $acc)))
        (local.set $o (i32.add (local.get $o) (i32.const 6)))
        (local.set $t (i32.add (local.get $t) (i32.const 32)))
        (br $pixels)))
      (local.set $src (i32.add (local.get $src) (local.get $srcStride)))
      (local.set $mid (i32.add (local.get $mid) (local.get $midStride)))
      (local.set $rows (i32.sub (local.get $rows) (i32.const 1)))
      (br $each_row))))

  ;; Down the columns: $n output rows of $count bytes from $out, one after the other, each from four rows of
  ;; int16 values. Output row j reads the table's entry at $table + 32 j: the byte addresses of its four rows,
  ;; then their four coefficients (int32). Sixteen values a step; results are clamped to 0-255.
  (func (export "vertical") (param $out i32) (param $count i32) (param $table i32) (param $n i32)
    (local $end i32) (local $r0 i32) (local $r1 i32) (local $r2 i32) (local $r3 i32)
    (local $c0 v128) (local $c1 v128) (local $c2 v128) (local $c3 v128) (local $i i32) (local $at i32)
    (local $a v128) (local $b v128) (local $c v128) (local $d v128) (local $low v128)
    (local.set $end (i32.add (local.get $table) (i32.shl (local.get $n) (i32.const 5))))
    (block $rows_done (loop $each_row
      (br_if $rows_done (i32.ge_u (local.get $table) (local.get $end)))
      (local.set $r0 (i32.load (local.get $table)))
      (local.set $r1 (i32.load offset=4 (local.get $table)))
      (local.set $r2 (i32.load offset=8 (local.get $table)))
      (local.set $r3 (i32.load offset=12 (local.get $table)))
      (local.set $c0 (i32x4.splat (i32.load offset=16 (local.get $table))))
      (local.set $c1 (i32x4.splat (i32.load offset=20 (local.get $table))))
      (local.set $c2 (i32x4.splat (i32.load offset=24 (local.get $table))))
      (local.set $c3 (i32x4.splat (i32.load offset=28 (local.get $table))))
      (local.set $i (i32.const 0))
      (block $done (loop $values
        (br_if $done (i32.ge_s (local.get $i) (local.get $count)))
        (local.set $at (i32.shl (local.get $i) (i32.const 1)))
        (local.set $a (v128.load offset=0 (i32.add (local.get $r0) (local.get $at))))
        (local.set $b (v128.load offset=0 (i32.add (local.get $r1) (local.get $at))))
        (local.set $c (v128.load offset=0 (i32.add (local.get $r2) (local.get $at))))
        (local.set $d (v128.load offset=0 (i32.add (local.get $r3) (local.get $at))))
        (local.set $low
          (i16x8.narrow_i32x4_s
            (i32x4.shr_s (i32x4.add (i32x4.splat (i32.const 2048)) (i32x4.add
              (i32x4.add (i32x4.mul (i32x4.extend_low_i16x8_s (local.get $a)) (local.get $c0)) (i32x4.mul (i32x4.extend_low_i16x8_s (local.get $b)) (local.get $c1)))
              (i32x4.add (i32x4.mul (i32x4.extend_low_i16x8_s (local.get $c)) (local.get $c2)) (i32x4.mul (i32x4.extend_low_i16x8_s (local.get $d)) (local.get $c3)))))
              (i32.const 12))
            (i32x4.shr_s (i32x4.add (i32x4.splat (i32.const 2048)) (i32x4.add
              (i32x4.add (i32x4.mul (i32x4.extend_high_i16x8_s (local.get $a)) (local.get $c0)) (i32x4.mul (i32x4.extend_high_i16x8_s (local.get $b)) (local.get $c1)))
              (i32x4.add (i32x4.mul (i32x4.extend_high_i16x8_s (local.get $c)) (local.get $c2)) (i32x4.mul (i32x4.extend_high_i16x8_s (local.get $d)) (local.get $c3)))))
              (i32.const 12))))
        ;; The next eight values the same way, then all sixteen clamped to bytes.
        (local.set $a (v128.load offset=16 (i32.add (local.get $r0) (local.get $at))))
        (local.set $b (v128.load offset=16 (i32.add (local.get $r1) (local.get $at))))
        (local.set $c (v128.load offset=16 (i32.add (local.get $r2) (local.get $at))))
        (local.set $d (v128.load offset=16 (i32.add (local.get $r3) (local.get $at))))
        (v128.store (i32.add (local.get $out) (local.get $i)) (i8x16.narrow_i16x8_u (local.get $low)
          (i16x8.narrow_i32x4_s
            (i32x4.shr_s (i32x4.add (i32x4.splat (i32.const 2048)) (i32x4.add
              (i32x4.add (i32x4.mul (i32x4.extend_low_i16x8_s (local.get $a)) (local.get $c0)) (i32x4.mul (i32x4.extend_low_i16x8_s (local.get $b)) (local.get $c1)))
              (i32x4.add (i32x4.mul (i32x4.extend_low_i16x8_s (local.get $c)) (local.get $c2)) (i32x4.mul (i32x4.extend_low_i16x8_s (local.get $d)) (local.get $c3)))))
              (i32.const 12))
            (i32x4.shr_s (i32x4.add (i32x4.splat (i32.const 2048)) (i32x4.add
              (i32x4.add (i32x4.mul (i32x4.extend_high_i16x8_s (local.get $a)) (local.get $c0)) (i32x4.mul (i32x4.extend_high_i16x8_s (local.get $b)) (local.get $c1)))
              (i32x4.add (i32x4.mul (i32x4.extend_high_i16x8_s (local.get $c)) (local.get $c2)) (i32x4.mul (i32x4.extend_high_i16x8_s (local.get $d)) (local.get $c3)))))
              (i32.const 12)))))
        (local.set $i (i32.add (local.get $i) (i32.const 16)))
        (br $values)))
      (local.set $out (i32.add (local.get $out) (local.get $count)))
      (local.set $table (i32.add (local.get $table) (i32.const 32)))
      (br $each_row))))
)
