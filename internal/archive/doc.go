// Package archive is Sandman's own copy of a session's workspace: a folder
// as a tar stream compressed with zstd (a ".tar.zst" object), the
// reverse, and the object store such copies are kept in.
//
// The format is a POSIX tar stream (ustar, with PAX or GNU records for long
// names) of one folder, every member named relative to it with a leading
// "./" (the folder itself is "./"), compressed as one zstd frame. In a
// cloud sandbox the tar is made inside the sandbox by GNU tar
// ([TarCommand]) and its stdout is compressed by Sandman as it streams out
// ([Compress]); the local provider and the tests make the same stream in Go
// ([PackTar], [Pack]). Both honour the same exclude patterns ([Excludes]),
// so a folder archives to the same members either way.
//
// [Unpack] and [UnpackTar] write such a stream back into a folder and refuse
// what could write outside it: absolute names, ".." components, members
// under a symbolic link, symbolic and hard links that point outside, and
// device files. [Checker] applies the same refusals to a stream without
// writing it, and [Checked] while the stream passes on to a sandbox's
// `tar -x`.
//
// [Store] is where archives are kept, under keys made by [Key]
// (<account>/<session>/<checkpoint>.tar.zst): an S3 bucket in AWS
// (internal/archive/s3store) or a folder locally (internal/archive/dirstore).
// internal/archive/archivetest is the contract both adapters pass.
package archive
