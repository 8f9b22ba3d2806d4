-- +goose Up
-- The settled Solana transaction itself (wire bytes, both signatures), so
-- the embedded network's RPC can answer getTransaction. Transfers settled
-- before this column existed have none.
ALTER TABLE svm_transfers ADD COLUMN tx bytea;

-- +goose Down
ALTER TABLE svm_transfers DROP COLUMN tx;
