// SPDX-License-Identifier: MIT
pragma solidity 0.8.26;

/// @title ProofRegistry
/// @notice Records proofs the platform verified (zkVerify relay jobs) or
/// accepted (KYC proofs) on the embedded chain: each record binds an id
/// (keccak256 of the job's or proof's id) to a digest (the job's statement,
/// the KYC proof's digest). Only the platform's account records; anyone
/// reads a record back to check it.
contract ProofRegistry {
    address public immutable recorder;

    struct Record {
        bytes32 digest;
        uint64 blockNumber;
        uint64 timestamp;
    }

    mapping(bytes32 => Record) private records;

    event ProofRecorded(bytes32 indexed id, bytes32 indexed digest);

    constructor() {
        recorder = msg.sender;
    }

    /// @notice Records digest under id, once.
    function record(bytes32 id, bytes32 digest) external {
        require(msg.sender == recorder, "only the recorder records");
        require(digest != bytes32(0), "empty digest");
        require(records[id].digest == bytes32(0), "already recorded");
        records[id] = Record(digest, uint64(block.number), uint64(block.timestamp));
        emit ProofRecorded(id, digest);
    }

    /// @notice The record under id (zero digest: none).
    function recordOf(bytes32 id) external view returns (bytes32 digest, uint64 blockNumber, uint64 timestamp) {
        Record memory r = records[id];
        return (r.digest, r.blockNumber, r.timestamp);
    }

    /// @notice Whether id was recorded with exactly digest.
    function isRecorded(bytes32 id, bytes32 digest) external view returns (bool) {
        return digest != bytes32(0) && records[id].digest == digest;
    }
}
