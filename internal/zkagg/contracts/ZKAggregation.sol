// SPDX-License-Identifier: MIT
pragma solidity 0.8.26;

/// @title ZKAggregation: the embedded chain's stand-in for zkVerify's proof
/// verification contract. The platform's aggregation publishes each domain's
/// batch root here; anyone checks a statement's inclusion with
/// verifyProofAggregation, whose arguments are those of zkVerify's contract.
/// Written for Conduit (internal/zkagg); not zkVerify's code.
contract ZKAggregation {
    /// The account allowed to publish roots (the deployer).
    address public immutable publisher;

    /// domainId => aggregationId => root (zero: not published).
    mapping(uint256 => mapping(uint256 => bytes32)) public proofsAggregations;

    event NewAggregationReceipt(uint256 indexed domainId, uint256 indexed aggregationId, bytes32 proofsAggregation);

    constructor() {
        publisher = msg.sender;
    }

    /// Publishes an aggregation's root once; publishing it again with the
    /// same root is a no-op (a retried transaction), with another reverts.
    function submitAggregation(uint256 domainId, uint256 aggregationId, bytes32 proofsAggregation) external {
        require(msg.sender == publisher, "not the publisher");
        require(proofsAggregation != bytes32(0), "empty root");
        bytes32 had = proofsAggregations[domainId][aggregationId];
        if (had == proofsAggregation) {
            return;
        }
        require(had == bytes32(0), "aggregation already published with another root");
        proofsAggregations[domainId][aggregationId] = proofsAggregation;
        emit NewAggregationReceipt(domainId, aggregationId, proofsAggregation);
    }

    /// True when leaf (a statement; its Merkle leaf is keccak256(leaf)) sits
    /// at index among leafCount leaves of the published aggregation.
    function verifyProofAggregation(
        uint256 domainId,
        uint256 aggregationId,
        bytes32 leaf,
        bytes32[] calldata merklePath,
        uint256 leafCount,
        uint256 index
    ) external view returns (bool) {
        bytes32 root = proofsAggregations[domainId][aggregationId];
        if (root == bytes32(0)) {
            return false;
        }
        return verifyProofKeccak(root, merklePath, leafCount, index, leaf);
    }

    /// Substrate's binary Merkle tree with Keccak-256: pairs hashed in
    /// position order, an odd last node promoted unchanged (no path entry
    /// for that level). Every path entry must be used.
    function verifyProofKeccak(
        bytes32 root,
        bytes32[] calldata path,
        uint256 leafCount,
        uint256 index,
        bytes32 leaf
    ) public pure returns (bool) {
        if (leafCount == 0 || index >= leafCount) {
            return false;
        }
        bytes32 node = keccak256(abi.encodePacked(leaf));
        uint256 width = leafCount;
        uint256 k = 0;
        while (width > 1) {
            bool promoted = index == width - 1 && width % 2 == 1;
            if (!promoted) {
                if (k == path.length) {
                    return false;
                }
                if (index % 2 == 0) {
                    node = keccak256(abi.encodePacked(node, path[k]));
                } else {
                    node = keccak256(abi.encodePacked(path[k], node));
                }
                k++;
            }
            index /= 2;
            width = (width + 1) / 2;
        }
        return k == path.length && node == root;
    }
}
