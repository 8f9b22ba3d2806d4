// Package zkagg is proof aggregation as zkVerify does it: the Merkle tree
// over a domain's batch of statements (merkle.go, interchangeable with the
// roots and paths zkVerify publishes), the aggregation records and the
// domain service behind GET /api/zkverify/aggregation/{aggregationId}
// (service.go), and the aggregation contract on the embedded EVM chain
// (contract.go).
package zkagg
