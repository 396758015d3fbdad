// dlgraph.attention's verifier: head counts, layouts, masks, dropout and
// the gradient's operands, each error naming the sizes that are wrong.
// RUN: dlc-opt %s --split-input-file --verify-diagnostics

func.func @heads_not_a_multiple(%q: tensor<1x6x8x16xf32>, %k: tensor<1x4x8x16xf32>, %v: tensor<1x4x8x16xf32>) {
  // expected-error @+1 {{the query's 6 heads are not a multiple of the key/value's 4 heads}}
  %o, %lse = dlgraph.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<1x6x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> (tensor<1x6x8x16xf32>, tensor<1x6x8xf32>)
  return
}

// -----

func.func @key_head_size(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x8xf32>, %v: tensor<1x2x8x16xf32>) {
  // expected-error @+1 {{[batch, heads, sequence, head size] of query [1, 2, 8, 16], key [1, 2, 8, 8] and value [1, 2, 8, 16] disagree}}
  %o, %lse = dlgraph.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<1x2x8x16xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>)
  return
}

// -----

func.func @seq_first_flags(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) {
  // expected-error @+1 {{seq_first must be empty or hold 4 flags (query, key, value, result), got 2}}
  %o, %lse = dlgraph.attention %q, %k, %v {scale = 1.0 : f64, seq_first = array<i1: true, true>} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>)
  return
}

// -----

func.func @mask_shape(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %m: tensor<1x1x8x4xf32>) {
  // expected-error @+1 {{mask of shape [1, 1, 8, 4] does not broadcast to the scores' [batch, query heads, query length, key length] = [1, 2, 8, 8]}}
  %o, %lse = dlgraph.attention %q, %k, %v mask %m {scale = 1.0 : f64} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x1x8x4xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>)
  return
}

// -----

func.func @dropout_without_step(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) {
  // expected-error @+1 {{a step operand is needed exactly when dropout_ratio > 0 (ratio 0.1)}}
  %o, %lse = dlgraph.attention %q, %k, %v {scale = 1.0 : f64, dropout_ratio = 0.1 : f32} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>)
  return
}

// -----

func.func @mixed_f64(%q: tensor<1x2x8x16xf64>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) {
  // expected-error @+1 {{query, key and value must each be f32, f16 or bf16, or all f64}}
  %o, %lse = dlgraph.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<1x2x8x16xf64>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf64>, tensor<1x2x8xf32>)
  return
}

// -----

func.func @result_type(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) {
  // expected-error @+1 {{result #0 shape is [1, 8, 2, 16], expected [1, 2, 8, 16]}}
  %o, %lse = dlgraph.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x8x2x16xf32>, tensor<1x2x8xf32>)
  return
}

// -----

func.func @grad_lse(%q: tensor<1x2x8x16xf32>, %o: tensor<1x2x8x16xf32>, %lse: tensor<1x2x8xf16>) {
  // expected-error @+1 {{lse has type 'tensor<1x2x8xf16>', expected f32 of shape [1, 2, 8]}}
  %dq, %dk, %dv = dlgraph.attention_grad %q, %q, %q, %o, %lse, %o {scale = 1.0 : f64} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8xf16>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
  return
}
