// Package onnx reads ONNX model files without generated protobuf code: the
// graph (nodes with their op type, inputs, outputs and attributes, including
// the subgraphs of If/Loop nodes), the initializers, and the declared graph
// inputs and outputs.
//
// It exists so that Forge can take the weights out of the ONNX files that
// models ship as and name them; it does not execute graphs. Large tensors are
// not copied: Open maps the file and every tensor's Raw bytes alias the
// mapping, so a 325 MB model costs page cache, not heap.
package onnx
