package daytona

// ExecLine is execLine, for the tests of package daytona_test.
var ExecLine = execLine
