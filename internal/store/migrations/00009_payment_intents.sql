-- +goose Up
-- A payment is recorded before it is settled (status pending), marked when
-- it is handed to the facilitator (submitted), and completed with its
-- transaction (settled). A crash at any point leaves a row that says what
-- to reconcile. Each row is bound to what the payment buys: its terms
-- (amount, asset, payee, network, resource) and its purpose (the render
-- run, or the top-up's credited account); a recorded payment answers only
-- that purchase.
ALTER TABLE payments ALTER COLUMN transaction DROP NOT NULL;
ALTER TABLE payments ALTER COLUMN settled_at DROP NOT NULL;
ALTER TABLE payments ALTER COLUMN settled_at DROP DEFAULT;
ALTER TABLE payments ADD COLUMN status text NOT NULL DEFAULT 'settled'
    CHECK (status IN ('pending', 'submitted', 'settled'));
ALTER TABLE payments ADD COLUMN asset text NOT NULL DEFAULT '';
ALTER TABLE payments ADD COLUMN pay_to text NOT NULL DEFAULT '';
ALTER TABLE payments ADD COLUMN purpose text NOT NULL DEFAULT '';
ALTER TABLE payments ADD COLUMN created_at timestamptz NOT NULL DEFAULT now();
UPDATE payments p SET purpose = 'render/' || m.run_id
    FROM media_runs m WHERE m.network = p.network AND m.transaction = p.transaction;
UPDATE payments SET purpose = 'topup/' || coalesce(account_id, 'wallet') WHERE purpose = '';
ALTER TABLE payments ALTER COLUMN status DROP DEFAULT;
ALTER TABLE payments ADD CONSTRAINT payments_settled_has_transaction
    CHECK ((status = 'settled') = (transaction IS NOT NULL AND settled_at IS NOT NULL));
CREATE INDEX payments_unsettled ON payments (created_at) WHERE status <> 'settled';

-- +goose Down
DROP INDEX payments_unsettled;
DELETE FROM payments WHERE status <> 'settled';
ALTER TABLE payments DROP CONSTRAINT payments_settled_has_transaction;
ALTER TABLE payments DROP COLUMN created_at, DROP COLUMN purpose, DROP COLUMN pay_to, DROP COLUMN asset, DROP COLUMN status;
ALTER TABLE payments ALTER COLUMN settled_at SET DEFAULT now();
ALTER TABLE payments ALTER COLUMN settled_at SET NOT NULL;
ALTER TABLE payments ALTER COLUMN transaction SET NOT NULL;
