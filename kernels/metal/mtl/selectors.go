package mtl

import (
	"fmt"
	"strings"
)

// selector indexes the Objective-C messages the bridge sends. Selectors are
// registered with the runtime once (sel_registerName takes the runtime's
// lock, too slow for every call) into a table indexed by these constants.
type selector uint8

// The messages the bridge sends, grouped by receiver.
const (
	// NSObject and Foundation
	selRelease selector = iota
	selRetain
	selNew
	selRespondsToSelector
	selStringWithUTF8String // NSString class
	selUTF8String
	selFileURLWithPath // NSURL class
	selArrayWithObject // NSArray class
	selDomain          // NSError
	selCode
	selLocalizedDescription
	selLocalizedFailureReason
	selOperatingSystemVersionString // NSProcessInfo
	selProcessInfo

	// MTLDevice
	selName
	selHasUnifiedMemory
	selSupportsFamily
	selMaxBufferLength
	selNewBufferWithLength
	selNewBufferWithBytesNoCopy
	selNewCommandQueue
	selNewLibraryWithSource
	selNewComputePipelineStateWithFunction
	selNewComputePipelineStateWithDescriptor
	selNewBinaryArchiveWithDescriptor

	// MTLBuffer
	selContents
	selLength

	// MTLCompileOptions
	selSetFastMathEnabled
	selSetMathMode

	// MTLLibrary
	selNewFunctionWithName

	// MTLComputePipelineState
	selMaxTotalThreadsPerThreadgroup
	selThreadExecutionWidth

	// MTLComputePipelineDescriptor, MTLBinaryArchiveDescriptor, MTLBinaryArchive
	selSetComputeFunction
	selSetBinaryArchives
	selSetURL
	selAddComputePipelineFunctions
	selSerializeToURL

	// MTLCommandQueue, MTLCommandBuffer
	selCommandBuffer
	selComputeCommandEncoder
	selCommit
	selWaitUntilCompleted
	selStatus
	selError

	// MTLComputeCommandEncoder
	selSetComputePipelineState
	selSetBufferOffsetAtIndex
	selSetBytesLengthAtIndex
	selDispatchThreads
	selDispatchThreadgroups
	selEndEncoding

	numSelectors
)

// selectorTable spells each selector with the number of arguments its
// message takes (the number of colons in its name: a mismatch is a bug
// that would crash on a Mac, caught by the table's test on any machine).
var selectorTable = [numSelectors]struct {
	name string
	args int
}{
	selRelease:                      {"release", 0},
	selRetain:                       {"retain", 0},
	selNew:                          {"new", 0},
	selRespondsToSelector:           {"respondsToSelector:", 1},
	selStringWithUTF8String:         {"stringWithUTF8String:", 1},
	selUTF8String:                   {"UTF8String", 0},
	selFileURLWithPath:              {"fileURLWithPath:", 1},
	selArrayWithObject:              {"arrayWithObject:", 1},
	selDomain:                       {"domain", 0},
	selCode:                         {"code", 0},
	selLocalizedDescription:         {"localizedDescription", 0},
	selLocalizedFailureReason:       {"localizedFailureReason", 0},
	selOperatingSystemVersionString: {"operatingSystemVersionString", 0},
	selProcessInfo:                  {"processInfo", 0},

	selName:                                  {"name", 0},
	selHasUnifiedMemory:                      {"hasUnifiedMemory", 0},
	selSupportsFamily:                        {"supportsFamily:", 1},
	selMaxBufferLength:                       {"maxBufferLength", 0},
	selNewBufferWithLength:                   {"newBufferWithLength:options:", 2},
	selNewBufferWithBytesNoCopy:              {"newBufferWithBytesNoCopy:length:options:deallocator:", 4},
	selNewCommandQueue:                       {"newCommandQueue", 0},
	selNewLibraryWithSource:                  {"newLibraryWithSource:options:error:", 3},
	selNewComputePipelineStateWithFunction:   {"newComputePipelineStateWithFunction:error:", 2},
	selNewComputePipelineStateWithDescriptor: {"newComputePipelineStateWithDescriptor:options:reflection:error:", 4},
	selNewBinaryArchiveWithDescriptor:        {"newBinaryArchiveWithDescriptor:error:", 2},

	selContents: {"contents", 0},
	selLength:   {"length", 0},

	selSetFastMathEnabled: {"setFastMathEnabled:", 1},
	selSetMathMode:        {"setMathMode:", 1},

	selNewFunctionWithName: {"newFunctionWithName:", 1},

	selMaxTotalThreadsPerThreadgroup: {"maxTotalThreadsPerThreadgroup", 0},
	selThreadExecutionWidth:          {"threadExecutionWidth", 0},

	selSetComputeFunction:          {"setComputeFunction:", 1},
	selSetBinaryArchives:           {"setBinaryArchives:", 1},
	selSetURL:                      {"setUrl:", 1},
	selAddComputePipelineFunctions: {"addComputePipelineFunctionsWithDescriptor:error:", 2},
	selSerializeToURL:              {"serializeToURL:error:", 2},

	selCommandBuffer:         {"commandBuffer", 0},
	selComputeCommandEncoder: {"computeCommandEncoder", 0},
	selCommit:                {"commit", 0},
	selWaitUntilCompleted:    {"waitUntilCompleted", 0},
	selStatus:                {"status", 0},
	selError:                 {"error", 0},

	selSetComputePipelineState: {"setComputePipelineState:", 1},
	selSetBufferOffsetAtIndex:  {"setBuffer:offset:atIndex:", 3},
	selSetBytesLengthAtIndex:   {"setBytes:length:atIndex:", 3},
	selDispatchThreads:         {"dispatchThreads:threadsPerThreadgroup:", 2},
	selDispatchThreadgroups:    {"dispatchThreadgroups:threadsPerThreadgroup:", 2},
	selEndEncoding:             {"endEncoding", 0},
}

// checkSelectors reports the first malformed entry of the table: a
// missing name, a duplicate, or an argument count that the name's colons
// contradict.
func checkSelectors() (string, bool) {
	seen := map[string]bool{}
	for i, s := range selectorTable {
		switch {
		case s.name == "":
			return fmt.Sprintf("selector %d has no name", i), false
		case seen[s.name]:
			return s.name + " appears twice", false
		case strings.Count(s.name, ":") != s.args:
			return s.name + " has a wrong argument count", false
		case strings.ContainsAny(s.name, " \t\n"):
			return s.name + " contains white space", false
		}
		seen[s.name] = true
	}
	return "", true
}
