;; The inner loops of PDQ (kernels.ts loads them): the luminance and the Jarosz blur (jarosz.ts), and the DCT
;; (dct.ts), in float32 as the reference computes them: WebAssembly's f32 operations round every product, sum
;; and quotient to float32 exactly as Math.fround did, without converting each value to a double and back, and
;; the column passes and the DCT take four values per instruction. Compiled into kernels-wasm.ts by
;; `npx tsx scripts/wasm.ts`. Addresses are in bytes; rows are float32.
(module
  (memory (export "memory") 1)

;; Luminance of $n rows of $cols RGB pixels (bytes from $rgb, rows one after the other) into float32 rows
  ;; $stride bytes apart from $out: the double-precision weighted sum, then rounded to float32, as the
  ;; reference's Python bindings compute it. The products come from tables of the 256 values of each channel
  ;; times its weight (doubles, red at $weights, then green and blue), each the double product itself.
  (func (export "luminance") (param $weights i32) (param $rgb i32) (param $out i32) (param $cols i32) (param $n i32) (param $stride i32)
    (local $q i32) (local $end i32)
    (block $rows_done (loop $rows
      (br_if $rows_done (i32.le_s (local.get $n) (i32.const 0)))
      (local.set $q (local.get $out))
      (local.set $end (i32.add (local.get $out) (i32.shl (local.get $cols) (i32.const 2))))
      (block $done (loop $pixels
        (br_if $done (i32.ge_u (local.get $q) (local.get $end)))
        (f32.store (local.get $q) (f32.demote_f64 (f64.add
          (f64.add
            (f64.load (i32.add (local.get $weights) (i32.shl (i32.load8_u (local.get $rgb)) (i32.const 3))))
            (f64.load offset=2048 (i32.add (local.get $weights) (i32.shl (i32.load8_u offset=1 (local.get $rgb)) (i32.const 3)))))
          (f64.load offset=4096 (i32.add (local.get $weights) (i32.shl (i32.load8_u offset=2 (local.get $rgb)) (i32.const 3)))))))
        (local.set $rgb (i32.add (local.get $rgb) (i32.const 3)))
        (local.set $q (i32.add (local.get $q) (i32.const 4)))
        (br $pixels)))
      (local.set $out (i32.add (local.get $out) (local.get $stride)))
      (local.set $n (i32.sub (local.get $n) (i32.const 1)))
      (br $rows))))

  ;; One box pass along a line of $in into $out: the window grows for $p1 values (no output), outputs while it
  ;; grows for $p2, slides for $p3, and shrinks for $p4; each output is the sum under it over the values counted.
  (func (export "boxLine") (param $in i32) (param $out i32) (param $p1 i32) (param $p2 i32) (param $p3 i32) (param $p4 i32)
    (local $sum f32) (local $count i32) (local $full f32) (local $ri i32) (local $li i32)
    (local.set $ri (local.get $in))
    (local.set $li (local.get $in))
    (block $done1 (loop $phase1
      (br_if $done1 (i32.le_s (local.get $p1) (i32.const 0)))
      (local.set $sum (f32.add (local.get $sum) (f32.load (local.get $ri))))
      (local.set $ri (i32.add (local.get $ri) (i32.const 4)))
      (local.set $count (i32.add (local.get $count) (i32.const 1)))
      (local.set $p1 (i32.sub (local.get $p1) (i32.const 1)))
      (br $phase1)))
    (block $done2 (loop $phase2
      (br_if $done2 (i32.le_s (local.get $p2) (i32.const 0)))
      (local.set $sum (f32.add (local.get $sum) (f32.load (local.get $ri))))
      (local.set $ri (i32.add (local.get $ri) (i32.const 4)))
      (local.set $count (i32.add (local.get $count) (i32.const 1)))
      (f32.store (local.get $out) (f32.div (local.get $sum) (f32.convert_i32_s (local.get $count))))
      (local.set $out (i32.add (local.get $out) (i32.const 4)))
      (local.set $p2 (i32.sub (local.get $p2) (i32.const 1)))
      (br $phase2)))
    (local.set $full (f32.convert_i32_s (local.get $count)))
    (block $done3 (loop $phase3
      (br_if $done3 (i32.le_s (local.get $p3) (i32.const 0)))
      (local.set $sum (f32.sub (f32.add (local.get $sum) (f32.load (local.get $ri))) (f32.load (local.get $li))))
      (local.set $ri (i32.add (local.get $ri) (i32.const 4)))
      (local.set $li (i32.add (local.get $li) (i32.const 4)))
      (f32.store (local.get $out) (f32.div (local.get $sum) (local.get $full)))
      (local.set $out (i32.add (local.get $out) (i32.const 4)))
      (local.set $p3 (i32.sub (local.get $p3) (i32.const 1)))
      (br $phase3)))
    (block $done4 (loop $phase4
      (br_if $done4 (i32.le_s (local.get $p4) (i32.const 0)))
      (local.set $sum (f32.sub (local.get $sum) (f32.load (local.get $li))))
      (local.set $li (i32.add (local.get $li) (i32.const 4)))
      (local.set $count (i32.sub (local.get $count) (i32.const 1)))
      (f32.store (local.get $out) (f32.div (local.get $sum) (f32.convert_i32_s (local.get $count))))
      (local.set $out (i32.add (local.get $out) (i32.const 4)))
      (local.set $p4 (i32.sub (local.get $p4) (i32.const 1)))
      (br $phase4))))

  ;; boxLine on four lines at once ($a..$d into $oa..$od), one line per lane of a four-float vector: the same
  ;; sums in each lane, with one vector addition, subtraction and division where four of each would be.
  (func (export "boxLines") (param $a i32) (param $b i32) (param $c i32) (param $d i32)
    (param $oa i32) (param $ob i32) (param $oc i32) (param $od i32)
    (param $p1 i32) (param $p2 i32) (param $p3 i32) (param $p4 i32)
    (local $s v128) (local $q v128) (local $n v128)
    (local $count i32) (local $ri i32) (local $li i32) (local $oi i32)
    (block $done1 (loop $phase1
      (br_if $done1 (i32.le_s (local.get $p1) (i32.const 0)))
      (local.set $s (f32x4.add (local.get $s) (f32x4.replace_lane 3 (f32x4.replace_lane 2 (f32x4.replace_lane 1
          (f32x4.splat (f32.load (i32.add (local.get $a) (local.get $ri))))
          (f32.load (i32.add (local.get $b) (local.get $ri))))
          (f32.load (i32.add (local.get $c) (local.get $ri))))
          (f32.load (i32.add (local.get $d) (local.get $ri))))))
      (local.set $ri (i32.add (local.get $ri) (i32.const 4)))
      (local.set $count (i32.add (local.get $count) (i32.const 1)))
      (local.set $p1 (i32.sub (local.get $p1) (i32.const 1)))
      (br $phase1)))
    (block $done2 (loop $phase2
      (br_if $done2 (i32.le_s (local.get $p2) (i32.const 0)))
      (local.set $s (f32x4.add (local.get $s) (f32x4.replace_lane 3 (f32x4.replace_lane 2 (f32x4.replace_lane 1
          (f32x4.splat (f32.load (i32.add (local.get $a) (local.get $ri))))
          (f32.load (i32.add (local.get $b) (local.get $ri))))
          (f32.load (i32.add (local.get $c) (local.get $ri))))
          (f32.load (i32.add (local.get $d) (local.get $ri))))))
      (local.set $ri (i32.add (local.get $ri) (i32.const 4)))
      (local.set $count (i32.add (local.get $count) (i32.const 1)))
      (local.set $n (f32x4.splat (f32.convert_i32_s (local.get $count))))
      (local.set $q (f32x4.div (local.get $s) (local.get $n)))
      (f32.store (i32.add (local.get $oa) (local.get $oi)) (f32x4.extract_lane 0 (local.get $q)))
      (f32.store (i32.add (local.get $ob) (local.get $oi)) (f32x4.extract_lane 1 (local.get $q)))
      (f32.store (i32.add (local.get $oc) (local.get $oi)) (f32x4.extract_lane 2 (local.get $q)))
      (f32.store (i32.add (local.get $od) (local.get $oi)) (f32x4.extract_lane 3 (local.get $q)))
      (local.set $oi (i32.add (local.get $oi) (i32.const 4)))
      (local.set $p2 (i32.sub (local.get $p2) (i32.const 1)))
      (br $phase2)))
    (local.set $n (f32x4.splat (f32.convert_i32_s (local.get $count))))
    (block $done3 (loop $phase3
      (br_if $done3 (i32.le_s (local.get $p3) (i32.const 0)))
      (local.set $s (f32x4.sub (f32x4.add (local.get $s) (f32x4.replace_lane 3 (f32x4.replace_lane 2 (f32x4.replace_lane 1
          (f32x4.splat (f32.load (i32.add (local.get $a) (local.get $ri))))
          (f32.load (i32.add (local.get $b) (local.get $ri))))
          (f32.load (i32.add (local.get $c) (local.get $ri))))
          (f32.load (i32.add (local.get $d) (local.get $ri))))) (f32x4.replace_lane 3 (f32x4.replace_lane 2 (f32x4.replace_lane 1
          (f32x4.splat (f32.load (i32.add (local.get $a) (local.get $li))))
          (f32.load (i32.add (local.get $b) (local.get $li))))
          (f32.load (i32.add (local.get $c) (local.get $li))))
          (f32.load (i32.add (local.get $d) (local.get $li))))))
      (local.set $ri (i32.add (local.get $ri) (i32.const 4)))
      (local.set $li (i32.add (local.get $li) (i32.const 4)))
      (local.set $q (f32x4.div (local.get $s) (local.get $n)))
      (f32.store (i32.add (local.get $oa) (local.get $oi)) (f32x4.extract_lane 0 (local.get $q)))
      (f32.store (i32.add (local.get $ob) (local.get $oi)) (f32x4.extract_lane 1 (local.get $q)))
      (f32.store (i32.add (local.get $oc) (local.get $oi)) (f32x4.extract_lane 2 (local.get $q)))
      (f32.store (i32.add (local.get $od) (local.get $oi)) (f32x4.extract_lane 3 (local.get $q)))
      (local.set $oi (i32.add (local.get $oi) (i32.const 4)))
      (local.set $p3 (i32.sub (local.get $p3) (i32.const 1)))
      (br $phase3)))
    (block $done4 (loop $phase4
      (br_if $done4 (i32.le_s (local.get $p4) (i32.const 0)))
      (local.set $s (f32x4.sub (local.get $s) (f32x4.replace_lane 3 (f32x4.replace_lane 2 (f32x4.replace_lane 1
          (f32x4.splat (f32.load (i32.add (local.get $a) (local.get $li))))
          (f32.load (i32.add (local.get $b) (local.get $li))))
          (f32.load (i32.add (local.get $c) (local.get $li))))
          (f32.load (i32.add (local.get $d) (local.get $li))))))
      (local.set $li (i32.add (local.get $li) (i32.const 4)))
      (local.set $count (i32.sub (local.get $count) (i32.const 1)))
      (local.set $n (f32x4.splat (f32.convert_i32_s (local.get $count))))
      (local.set $q (f32x4.div (local.get $s) (local.get $n)))
      (f32.store (i32.add (local.get $oa) (local.get $oi)) (f32x4.extract_lane 0 (local.get $q)))
      (f32.store (i32.add (local.get $ob) (local.get $oi)) (f32x4.extract_lane 1 (local.get $q)))
      (f32.store (i32.add (local.get $oc) (local.get $oi)) (f32x4.extract_lane 2 (local.get $q)))
      (f32.store (i32.add (local.get $od) (local.get $oi)) (f32x4.extract_lane 3 (local.get $q)))
      (local.set $oi (i32.add (local.get $oi) (i32.const 4)))
      (local.set $p4 (i32.sub (local.get $p4) (i32.const 1)))
      (br $phase4))))

  ;; A step of the box pass down every column, four columns per instruction over $vectors x 4 columns (rows are
  ;; padded to a multiple of four): the running sums at $sums take row $add (when $add is not 0) and lose row
  ;; $sub (when $sub is not 0), each rounded to float32 on its own; when $count is above 0, $out receives the
  ;; sums over $count.
  (func (export "columnStep") (param $sums i32) (param $add i32) (param $sub i32) (param $out i32) (param $vectors i32) (param $count i32)
    (local $s v128) (local $n v128) (local $x i32) (local $end i32)
    (local.set $n (f32x4.splat (f32.convert_i32_s (local.get $count))))
    (local.set $end (i32.shl (local.get $vectors) (i32.const 4)))
    (block $done (loop $columns
      (br_if $done (i32.ge_u (local.get $x) (local.get $end)))
      (local.set $s (v128.load (i32.add (local.get $sums) (local.get $x))))
      (if (local.get $add) (then (local.set $s (f32x4.add (local.get $s) (v128.load (i32.add (local.get $add) (local.get $x)))))))
      (if (local.get $sub) (then (local.set $s (f32x4.sub (local.get $s) (v128.load (i32.add (local.get $sub) (local.get $x)))))))
      (v128.store (i32.add (local.get $sums) (local.get $x)) (local.get $s))
      (if (i32.gt_s (local.get $count) (i32.const 0))
        (then (v128.store (i32.add (local.get $out) (local.get $x)) (f32x4.div (local.get $s) (local.get $n)))))
      (local.set $x (i32.add (local.get $x) (i32.const 16)))
      (br $columns))))

  ;; B = D A Dt for the 64x64 A at $a (rows of 64 floats): T = D A (16 rows of 64) at $t, then B (16 x 16) at
  ;; $b. $d holds D (16 rows of 64), $dt its transpose (64 rows of 16). Each sum runs over k in order, its
  ;; products and partial sums rounded to float32; four outputs of a row at once.
  (func (export "dct") (param $d i32) (param $dt i32) (param $a i32) (param $t i32) (param $b i32)
    (local $i i32) (local $j i32) (local $k i32) (local $acc v128)
    (local.set $i (i32.const 0))
    (loop $rows
      (local.set $j (i32.const 0))
      (loop $columns
        (local.set $acc (v128.const i32x4 0 0 0 0))
        (local.set $k (i32.const 0))
        (loop $terms
          (local.set $acc (f32x4.add (local.get $acc) (f32x4.mul
            (f32x4.splat (f32.load (i32.add (local.get $d) (i32.shl (i32.add (i32.shl (local.get $i) (i32.const 6)) (local.get $k)) (i32.const 2)))))
            (v128.load (i32.add (local.get $a) (i32.add (i32.shl (local.get $k) (i32.const 8)) (local.get $j)))))))
          (local.set $k (i32.add (local.get $k) (i32.const 1)))
          (br_if $terms (i32.lt_u (local.get $k) (i32.const 64))))
        (v128.store (i32.add (local.get $t) (i32.add (i32.shl (local.get $i) (i32.const 8)) (local.get $j))) (local.get $acc))
        (local.set $j (i32.add (local.get $j) (i32.const 16)))
        (br_if $columns (i32.lt_u (local.get $j) (i32.const 256))))
      (local.set $j (i32.const 0))
      (loop $outputs
        (local.set $acc (v128.const i32x4 0 0 0 0))
        (local.set $k (i32.const 0))
        (loop $terms
          (local.set $acc (f32x4.add (local.get $acc) (f32x4.mul
            (f32x4.splat (f32.load (i32.add (local.get $t) (i32.shl (i32.add (i32.shl (local.get $i) (i32.const 6)) (local.get $k)) (i32.const 2)))))
            (v128.load (i32.add (local.get $dt) (i32.add (i32.shl (local.get $k) (i32.const 6)) (local.get $j)))))))
          (local.set $k (i32.add (local.get $k) (i32.const 1)))
          (br_if $terms (i32.lt_u (local.get $k) (i32.const 64))))
        (v128.store (i32.add (local.get $b) (i32.add (i32.shl (local.get $i) (i32.const 6)) (local.get $j))) (local.get $acc))
        (local.set $j (i32.add (local.get $j) (i32.const 16)))
        (br_if $outputs (i32.lt_u (local.get $j) (i32.const 64))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $rows (i32.lt_u (local.get $i) (i32.const 16)))))
)
