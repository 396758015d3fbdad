// RUN: dlc-opt %s --canonicalize --split-input-file | FileCheck %s
// Constant folding through the dlgraph op folders (GraphFolders.cpp): what
// folds, with broadcasting, and what is left to run time because folding it
// could differ from the kernels (inexact float results). Integer division
// and remainder by zero fold to 0, as the kernels define them.

// CHECK-LABEL: func.func @int_arith
// CHECK-DAG: %[[ADD:.+]] = dlgraph.constant dense<[11, 12, 13]> : tensor<3xi64>
// CHECK-DAG: %[[MOD:.+]] = dlgraph.constant dense<[1, 2, -2, -1]> : tensor<4xi64>
// CHECK-DAG: %[[FMOD:.+]] = dlgraph.constant dense<[1, -1, 1, -1]> : tensor<4xi64>
// CHECK-DAG: %[[DIV:.+]] = dlgraph.constant dense<[2, -2, -2, 2]> : tensor<4xi64>
// CHECK-DAG: %[[BYZERO:.+]] = dlgraph.constant dense<[1, 0]> : tensor<2xi64>
// CHECK-DAG: %[[MODZERO:.+]] = dlgraph.constant dense<0> : tensor<2xi64>
// CHECK-DAG: %[[ABS:.+]] = dlgraph.constant dense<[-2147483648, 2147483647, 0]> : tensor<3xi32>
// CHECK: return %[[ADD]], %[[MOD]], %[[FMOD]], %[[DIV]], %[[BYZERO]], %[[MODZERO]], %[[ABS]]
func.func @int_arith() -> (tensor<3xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<2xi64>, tensor<2xi64>, tensor<3xi32>) {
  %a = dlgraph.constant dense<[1, 2, 3]> : tensor<3xi64>
  %ten = dlgraph.constant dense<10> : tensor<i64>
  %add = dlgraph.add %a, %ten : (tensor<3xi64>, tensor<i64>) -> tensor<3xi64>
  // Python % takes the divisor's sign, C fmod the dividend's.
  %x = dlgraph.constant dense<[7, -7, 7, -7]> : tensor<4xi64>
  %y = dlgraph.constant dense<[3, 3, -3, -3]> : tensor<4xi64>
  %mod = dlgraph.mod %x, %y : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %fmod = dlgraph.fmod %x, %y : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %div = dlgraph.div %x, %y : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %n = dlgraph.constant dense<[1, 2]> : tensor<2xi64>
  %z = dlgraph.constant dense<[1, 0]> : tensor<2xi64>
  %byzero = dlgraph.div %n, %z : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  // 2 % 0 == 0 and 1 % 1 == 0.
  %modzero = dlgraph.mod %n, %z : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  // |INT_MIN| wraps to INT_MIN.
  %m = dlgraph.constant dense<[-2147483648, -2147483647, 0]> : tensor<3xi32>
  %abs = dlgraph.abs %m : tensor<3xi32>
  return %add, %mod, %fmod, %div, %byzero, %modzero, %abs : tensor<3xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<2xi64>, tensor<2xi64>, tensor<3xi32>
}

// -----

// Float arithmetic folds with one rounding to nearest even, as the kernels
// compute it: 1.5 * 2 exactly, 1 / 3 to 0.333333343, and a constant mask's
// -FLT_MAX + 1 to -FLT_MAX. Results that overflow (FLT_MAX * 2), underflow
// (1e-30 * 1e-30) or divide by zero stay at run time.
// CHECK-LABEL: func.func @float_rounded
// CHECK-DAG: %[[MUL:.+]] = dlgraph.constant dense<[3.000000e+00, -1.000000e+00]> : tensor<2xf32>
// CHECK-DAG: %[[NEG:.+]] = dlgraph.constant dense<[-1.500000e+00, 5.000000e-01]> : tensor<2xf32>
// CHECK-DAG: %[[DIV:.+]] = dlgraph.constant dense<0.333333343> : tensor<2xf32>
// CHECK-DAG: %[[MASK:.+]] = dlgraph.constant dense<-3.40282347E+38> : tensor<f32>
// CHECK-DAG: %[[OVER:.+]] = dlgraph.mul
// CHECK-DAG: %[[UNDER:.+]] = dlgraph.mul
// CHECK-DAG: %[[BYZERO:.+]] = dlgraph.div
// CHECK: return %[[MUL]], %[[DIV]], %[[NEG]], %[[MASK]], %[[OVER]], %[[UNDER]], %[[BYZERO]]
func.func @float_rounded() -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) {
  %a = dlgraph.constant dense<[1.5, -0.5]> : tensor<2xf32>
  %two = dlgraph.constant dense<2.0> : tensor<f32>
  %three = dlgraph.constant dense<3.0> : tensor<f32>
  %mul = dlgraph.mul %a, %two : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  %one = dlgraph.constant dense<1.0> : tensor<2xf32>
  %div = dlgraph.div %one, %three : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  %neg = dlgraph.neg %a : tensor<2xf32>
  %lowest = dlgraph.constant dense<-3.40282347E+38> : tensor<f32>
  %onescalar = dlgraph.constant dense<1.0> : tensor<f32>
  %mask = dlgraph.add %lowest, %onescalar : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %over = dlgraph.mul %lowest, %two : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %tiny = dlgraph.constant dense<1.0e-30> : tensor<f32>
  %under = dlgraph.mul %tiny, %tiny : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %zero = dlgraph.constant dense<0.0> : tensor<f32>
  %byzero = dlgraph.div %onescalar, %zero : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %mul, %div, %neg, %mask, %over, %under, %byzero : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>
}

// -----

// The Swin attention mask: compare, select, cast.
// CHECK-LABEL: func.func @compare_select_cast
// CHECK-DAG: %[[SEL:.+]] = dlgraph.constant dense<{{\[}}[0.000000e+00, -1.000000e+02], [-1.000000e+02, 0.000000e+00]]> : tensor<2x2xf32>
// CHECK-DAG: %[[CAST:.+]] = dlgraph.constant dense<[2, -2, 0]> : tensor<3xi64>
// CHECK-DAG: %[[BOOL:.+]] = dlgraph.constant dense<[true, true, false]> : tensor<3xi1>
// CHECK: return %[[SEL]], %[[CAST]], %[[BOOL]]
func.func @compare_select_cast() -> (tensor<2x2xf32>, tensor<3xi64>, tensor<3xi1>) {
  %ids = dlgraph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %col = dlgraph.reshape %ids : tensor<2xf32> to tensor<2x1xf32>
  %ne = dlgraph.compare "ne", %col, %ids : (tensor<2x1xf32>, tensor<2xf32>) -> tensor<2x2xi1>
  %m = dlgraph.constant dense<-100.0> : tensor<f32>
  %z = dlgraph.constant dense<0.0> : tensor<f32>
  %sel = dlgraph.select %ne, %m, %z : (tensor<2x2xi1>, tensor<f32>, tensor<f32>) -> tensor<2x2xf32>
  // Float -> int truncates toward zero; anything -> bool is != 0.
  %f = dlgraph.constant dense<[2.7, -2.7, 0.0]> : tensor<3xf32>
  %cast = dlgraph.cast %f : tensor<3xf32> to tensor<3xi64>
  %bool = dlgraph.cast %f : tensor<3xf32> to tensor<3xi1>
  return %sel, %cast, %bool : tensor<2x2xf32>, tensor<3xi64>, tensor<3xi1>
}

// -----

// A NaN (or out-of-range) float -> int cast is undefined at run time.
// CHECK-LABEL: func.func @cast_nan
// CHECK: dlgraph.cast
func.func @cast_nan() -> tensor<1xi64> {
  %f = dlgraph.constant dense<0x7FC00000> : tensor<1xf32>
  %c = dlgraph.cast %f : tensor<1xf32> to tensor<1xi64>
  return %c : tensor<1xi64>
}

// -----

// Data movement on constants.
// CHECK-LABEL: func.func @data_movement
// CHECK-DAG: dlgraph.constant dense<{{\[}}[1, 4], [2, 5], [3, 6]]> : tensor<3x2xi64>
// CHECK-DAG: dlgraph.constant dense<[3, 1]> : tensor<2xi64>
// CHECK-DAG: dlgraph.constant dense<[-1, 1, 2, 3, -1]> : tensor<5xi64>
// CHECK-DAG: dlgraph.constant dense<{{\[}}[1, 2, 3, 7], [4, 5, 6, 8]]> : tensor<2x4xi64>
// CHECK-DAG: dlgraph.constant dense<{{\[}}[4, 5, 6], [0, 0, 0], [1, 2, 3]]> : tensor<3x3xi64>
// CHECK-DAG: dlgraph.constant dense<{{\[}}[7, 8], [7, 8]]> : tensor<2x2xi64>
// CHECK-NOT: dlgraph.transpose
// CHECK-NOT: dlgraph.slice
// CHECK-NOT: dlgraph.pad
// CHECK-NOT: dlgraph.concat
// CHECK-NOT: dlgraph.gather
// CHECK-NOT: dlgraph.broadcast_to
func.func @data_movement() -> (tensor<3x2xi64>, tensor<2xi64>, tensor<5xi64>, tensor<2x4xi64>, tensor<3x3xi64>, tensor<2x2xi64>) {
  %m = dlgraph.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>
  %t = dlgraph.transpose %m {perm = array<i64: 1, 0>} : tensor<2x3xi64> -> tensor<3x2xi64>
  %v = dlgraph.constant dense<[1, 2, 3]> : tensor<3xi64>
  %s = dlgraph.slice %v {starts = array<i64: 2>, steps = array<i64: -2>} : tensor<3xi64> -> tensor<2xi64>
  %p = dlgraph.pad %v {starts = array<i64: 1>, steps = array<i64: 1>, value = -1.0 : f64} : tensor<3xi64> -> tensor<5xi64>
  %col = dlgraph.constant dense<[[7], [8]]> : tensor<2x1xi64>
  %c = dlgraph.concat %m, %col {axis = 1 : i64} : (tensor<2x3xi64>, tensor<2x1xi64>) -> tensor<2x4xi64>
  // Index 5 is out of range: a row of zeros, as the kernels give.
  %i = dlgraph.constant dense<[1, 5, -2]> : tensor<3xi64>
  %g = dlgraph.gather %m, %i {axis = 0 : i64} : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<3x3xi64>
  %row = dlgraph.constant dense<[7, 8]> : tensor<2xi64>
  %b = dlgraph.broadcast_to %row : tensor<2xi64> to tensor<2x2xi64>
  return %t, %s, %p, %c, %g, %b : tensor<3x2xi64>, tensor<2xi64>, tensor<5xi64>, tensor<2x4xi64>, tensor<3x3xi64>, tensor<2x2xi64>
}

// -----

// Cast pairs: x -> wider -> x's type is x; x -> narrower -> x's type rounds
// and stays; an identity cast is its input.
// CHECK-LABEL: func.func @cast_pairs
// CHECK-SAME: (%[[B:.+]]: tensor<4xbf16>, %[[F:.+]]: tensor<4xf32>, %[[H:.+]]: tensor<4xf16>)
func.func @cast_pairs(%b: tensor<4xbf16>, %f: tensor<4xf32>, %h: tensor<4xf16>) -> (tensor<4xbf16>, tensor<4xf32>, tensor<4xf16>, tensor<4xf32>, tensor<4xbf16>) {
  %up = dlgraph.cast %b : tensor<4xbf16> to tensor<4xf32>
  %back = dlgraph.cast %up : tensor<4xf32> to tensor<4xbf16>
  // CHECK: %[[DOWN:.+]] = dlgraph.cast %[[F]] : tensor<4xf32> to tensor<4xbf16>
  // CHECK: %[[ROUND:.+]] = dlgraph.cast %[[DOWN]] : tensor<4xbf16> to tensor<4xf32>
  %down = dlgraph.cast %f : tensor<4xf32> to tensor<4xbf16>
  %round = dlgraph.cast %down : tensor<4xbf16> to tensor<4xf32>
  %hu = dlgraph.cast %h : tensor<4xf16> to tensor<4xf32>
  %hb = dlgraph.cast %hu : tensor<4xf32> to tensor<4xf16>
  %same = dlgraph.cast %f : tensor<4xf32> to tensor<4xf32>
  // bf16 -> f16 -> bf16 is not exact (f16 has less range): it stays.
  // CHECK: %[[BH:.+]] = dlgraph.cast %[[B]] : tensor<4xbf16> to tensor<4xf16>
  // CHECK: %[[BHB:.+]] = dlgraph.cast %[[BH]] : tensor<4xf16> to tensor<4xbf16>
  %bh = dlgraph.cast %b : tensor<4xbf16> to tensor<4xf16>
  %bhb = dlgraph.cast %bh : tensor<4xf16> to tensor<4xbf16>
  // CHECK: return %[[B]], %[[ROUND]], %[[H]], %[[F]], %[[BHB]]
  return %back, %round, %hb, %same, %bhb : tensor<4xbf16>, tensor<4xf32>, tensor<4xf16>, tensor<4xf32>, tensor<4xbf16>
}

// -----

// Bitwise ops and ONNX BitShift (opset 28): shifts by a negative amount or
// by the bit width or more leave the sign fill (0, or -1 for a right shift
// of a negative value); the left shift discards bits past the sign bit.
// CHECK-LABEL: func.func @bitwise
// CHECK-DAG: dense<[1, 0, 8, -2147483648]> : tensor<4xi32>
// CHECK-DAG: dense<[-4, -1, -1, 0]> : tensor<4xi32>
// CHECK-DAG: dense<[2, 6]> : tensor<2xi64>
// CHECK-DAG: dense<[-5, -1]> : tensor<2xi64>
// CHECK-DAG: dense<-7> : tensor<2xi64>
// CHECK-DAG: dense<[-4, 9]> : tensor<2xi64>
// CHECK-NOT: dlgraph.shift
// CHECK-NOT: dlgraph.bitwise
func.func @bitwise() -> (tensor<4xi32>, tensor<4xi32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) {
  %x = dlgraph.constant dense<[1, 1, 1, 1]> : tensor<4xi32>
  %s = dlgraph.constant dense<[0, -1, 3, 31]> : tensor<4xi32>
  %shl = dlgraph.shift_left %x, %s : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %n = dlgraph.constant dense<[-16, -1, -5, 7]> : tensor<4xi32>
  %t = dlgraph.constant dense<[2, 40, -1, 3]> : tensor<4xi32>
  %shr = dlgraph.shift_right %n, %t : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %a = dlgraph.constant dense<[-6, 15]> : tensor<2xi64>
  %b = dlgraph.constant dense<[3, -10]> : tensor<2xi64>
  %and = dlgraph.bitwise_and %a, %b : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  %or = dlgraph.bitwise_or %a, %b : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  %xor = dlgraph.bitwise_xor %a, %b : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  %not = dlgraph.bitwise_not %b : tensor<2xi64>
  return %shl, %shr, %and, %or, %xor, %not : tensor<4xi32>, tensor<4xi32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>
}

// -----

// BitCast keeps the bits; float Mod (fmod = 0) is NumPy's np.mod: the
// divisor's sign, and a zero remainder signed like the divisor.
// CHECK-LABEL: func.func @bitcast_and_float_mod
// CHECK-DAG: dense<[1065353216, -1073741824]> : tensor<2xi32>
// CHECK-DAG: dense<[1.000000e+00, -2.000000e+00, -0.000000e+00, 2.500000e+00]> : tensor<4xf32>
func.func @bitcast_and_float_mod() -> (tensor<2xi32>, tensor<4xf32>) {
  %f = dlgraph.constant dense<[1.0, -2.0]> : tensor<2xf32>
  %i = dlgraph.bitcast %f : tensor<2xf32> to tensor<2xi32>
  %x = dlgraph.constant dense<[7.0, 7.0, 6.0, -0.5]> : tensor<4xf32>
  %y = dlgraph.constant dense<[3.0, -3.0, -3.0, 3.0]> : tensor<4xf32>
  %mod = dlgraph.mod %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %i, %mod : tensor<2xi32>, tensor<4xf32>
}
