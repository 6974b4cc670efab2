<?php
// Idempotency-Key writer for the shared tables (README: "For services that write these tables").
// PHP 8.1+ with PDO pgsql or PDO mysql (MySQL 8.0.16+, MariaDB 10.6+), no dependencies: copy it.
// Tested by test/php-writer.test.ts against PostgreSQL and MariaDB.
declare(strict_types=1);

/** getCode() is the HTTP status to answer with. */
final class IdempotencyError extends RuntimeException {}

/**
 * postgresql://user:pass@host:port/db → [pgsql DSN, user, password]; mysql:// or mariadb:// → a mysql DSN in
 * utf8mb4; a pgsql: or mysql: DSN passes through.
 */
function pdo_dsn(string $dsn, ?string $user, ?string $password): array
{
    if (preg_match('~^(pgsql|mysql):(?!//)~', $dsn)) return [$dsn, $user, $password];
    $u = parse_url($dsn);
    $scheme = $u['scheme'] ?? '';
    if (!$u || !in_array($scheme, ['postgres', 'postgresql', 'mysql', 'mariadb'], true)) {
        throw new InvalidArgumentException('the DSN must be a postgres or mysql URL, or a pgsql: or mysql: PDO DSN');
    }
    $mysql = $scheme === 'mysql' || $scheme === 'mariadb';
    $parts = ['host' => $u['host'] ?? '127.0.0.1', 'port' => $u['port'] ?? ($mysql ? 3306 : 5432), 'dbname' => ltrim(rawurldecode($u['path'] ?? ''), '/')];
    parse_str($u['query'] ?? '', $query);
    if ($mysql) $parts['charset'] = 'utf8mb4';
    elseif (isset($query['sslmode'])) $parts['sslmode'] = $query['sslmode'];
    $pdoDsn = ($mysql ? 'mysql:' : 'pgsql:') . implode(';', array_map(fn ($k, $v) => "$k=$v", array_keys($parts), $parts));
    return [$pdoDsn, $user ?? (isset($u['user']) ? rawurldecode($u['user']) : null), $password ?? (isset($u['pass']) ? rawurldecode($u['pass']) : null)];
}

/** Lowercase hex SHA-256 of the canonical JSON: one intent, one hash, in every writer. */
function payload_hash(mixed $payload): string
{
    return hash('sha256', canonical_json($payload));
}

/**
 * The bytes lib/idempotency/hash.ts writes: object keys sorted by their bytes (SORT_STRING is
 * strcmp), recursively; lists in order; no whitespace; "/" and non-ASCII unescaped. Floats are
 * refused (PHP writes 1.0 where JavaScript writes 1): use integer minor units. A PHP array cannot
 * say {} or {"0": …} (those are lists): pass stdClass for them, e.g. from json_decode($json).
 */
function canonical_json(mixed $v): string
{
    if (is_float($v)) throw new IdempotencyError('payload has a float; use integer minor units', 400);
    if ($v instanceof JsonSerializable) return canonical_json($v->jsonSerialize());
    if (is_array($v) && array_is_list($v)) return '[' . implode(',', array_map('canonical_json', $v)) . ']';
    if (is_array($v) || $v instanceof stdClass) {
        $o = (array) $v;
        ksort($o, SORT_STRING);
        $members = array_map(fn ($k, $x) => canonical_json((string) $k) . ':' . canonical_json($x), array_keys($o), $o);
        return '{' . implode(',', $members) . '}';
    }
    if (is_object($v)) throw new IdempotencyError('payload has a ' . $v::class . ', not JSON data', 400);
    return json_encode($v, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE | JSON_UNESCAPED_LINE_TERMINATORS
        | JSON_THROW_ON_ERROR);
}

final class IdempotencyStore
{
    private const EXTRA = ['resource_type', 'resource_id', 'correlation_id', 'provider', 'amount_minor', 'currency'];

    private bool $mysql;

    /**
     * PostgreSQL: new PDO('pgsql:host=…;dbname=…', …). MySQL/MariaDB: new PDO('mysql:host=…;dbname=…;charset=utf8mb4', …)
     * — utf8mb4, or bodies with emoji do not survive; and without PDO::MYSQL_ATTR_FOUND_ROWS (PDO's default): with it,
     * a reservation that met an existing key reports 1 affected row, like a new one, and both requests would execute.
     */
    public function __construct(private PDO $db)
    {
        $db->setAttribute(PDO::ATTR_ERRMODE, PDO::ERRMODE_EXCEPTION);
        $this->mysql = $db->getAttribute(PDO::ATTR_DRIVER_NAME) === 'mysql';
    }

    /**
     * 'owner' (with the record 'id'): execute the effect, then complete() or fail(). Otherwise answer
     * with $r['http']: 'replay' (send the stored 'headers' pairs and 'body' exactly), 'conflict'
     * (422: key reused with another payload) or 'in_progress' (409: retry later).
     * $extra may set resource_type, resource_id, correlation_id, provider, amount_minor, currency.
     * Call it in autocommit, not inside a transaction of yours: the reservation must commit at once.
     */
    public function begin(string $scope, string $operation, ?string $key, mixed $payload,
                          int $ttlSeconds = 86400, array $extra = []): array
    {
        if ($key === null || $key === '') throw new IdempotencyError('Idempotency-Key missing', 400);
        if (!preg_match('/^[\x21-\x7e]{1,255}$/D', $key)) {
            throw new IdempotencyError('Idempotency-Key must be 1-255 visible ASCII characters', 400);
        }
        $hash = payload_hash($payload);
        $params = ['scope' => $scope, 'op' => $operation, 'key' => $key, 'hash' => $hash, 'ttl' => $ttlSeconds]
            + array_intersect_key($extra, array_flip(self::EXTRA)) + array_fill_keys(self::EXTRA, null);
        for ($attempt = 0; $attempt < 3; $attempt++) {
            // Never "select, then insert": the unique constraint elects exactly one owner, and the
            // 'reserved' event is written with the reservation, so it exists iff the row does.
            $owner = $this->mysql ? $this->reserveMysql($params) : $this->row(<<<'SQL'
                WITH ins AS (
                  INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status,
                    resource_type, resource_id, correlation_id, provider, amount_minor, currency, expires_at)
                  VALUES (:scope, :op, :key, :hash, 'processing', :resource_type, :resource_id, :correlation_id,
                    :provider, :amount_minor, :currency, now() + make_interval(secs => :ttl))
                  ON CONFLICT (scope, operation, idempotency_key) DO NOTHING
                  RETURNING *
                ), ev AS (
                  INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind, payload_hash)
                  SELECT id, scope, operation, idempotency_key, 'reserved', payload_hash FROM ins
                )
                SELECT id FROM ins
                SQL, $params);
            if ($owner) return ['outcome' => 'owner', 'id' => (int) $owner['id']];

            // ON CONFLICT (ON DUPLICATE KEY) waited for the other reservation to commit, so this read
            // sees it (unless a purge deleted it in between: then reserve again).
            $rec = $this->row('SELECT id, payload_hash, status, response_code, response_headers, response_body
                FROM idempotency_records WHERE scope = ? AND operation = ? AND idempotency_key = ?',
                [$scope, $operation, $key]);
            if (!$rec) continue;
            // Every answer is an event row too: the console's replay and conflict rates come from them.
            $event = fn (string $kind, ?int $code, ?array $detail) => $this->run(
                'INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind, payload_hash,
                   response_code, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ' . ($this->mysql ? '?' : '?::jsonb') . ')',
                [$rec['id'], $scope, $operation, $key, $kind, $hash, $code, $detail ? json_encode($detail) : null]);
            if ($rec['payload_hash'] !== $hash) { // a changed intent needs a new key: execute nothing
                $detail = ['expectedPayloadHash' => $rec['payload_hash'], 'receivedPayloadHash' => $hash];
                $event('conflict', null, $detail);
                return ['outcome' => 'conflict', 'http' => 422, 'id' => (int) $rec['id']] + $detail;
            }
            if ($rec['status'] === 'completed' || $rec['status'] === 'failed') {
                $event('replayed', $rec['response_code'], null);
                $headers = json_decode($rec['response_headers'] ?? '[]', true, 512, JSON_THROW_ON_ERROR);
                return ['outcome' => 'replay', 'http' => (int) ($rec['response_code'] ?? 200), 'id' => (int) $rec['id'],
                        'headers' => $headers, 'body' => $rec['response_body']];
            }
            $event('in_progress', null, ['status' => $rec['status']]); // processing, or pending reconciliation
            return ['outcome' => 'in_progress', 'http' => 409, 'id' => (int) $rec['id'], 'status' => $rec['status']];
        }
        throw new IdempotencyError('the record under this key was deleted while reserving; retry', 409);
    }

    /** processing → completed. Header pairs keep their order and repeats; the body is kept byte for byte. */
    public function complete(int $id, int $code, array $headerPairs, ?string $body,
                             ?string $resourceId = null, ?string $providerReference = null): void
    {
        $this->finish($id, 'completed', $code, $headerPairs, $body, 'resource_id = COALESCE(:rid, resource_id),
            provider_reference = COALESCE(:ref, provider_reference), last_error = NULL',
            ['rid' => $resourceId, 'ref' => $providerReference]);
    }

    /** processing → failed: the effect failed before anything happened; this error response is replayed. */
    public function fail(int $id, int $code, array $headerPairs, ?string $body, string $error): void
    {
        $this->finish($id, 'failed', $code, $headerPairs, $body, 'last_error = :error', ['error' => $error]);
    }

    /**
     * processing → pending: the provider call timed out, so the outcome is unknown (never mark it failed,
     * never re-send blindly). Stores the provider's request id and opens a reconciliation item for the
     * console to check; the record, its event and the item commit together.
     */
    public function markPending(int $id, string $provider, string $providerRequestId, string $error, int $firstCheckInSeconds = 60): void
    {
        $now = $this->mysql ? 'UTC_TIMESTAMP(6)' : 'now()';
        $later = $this->mysql ? 'UTC_TIMESTAMP(6) + INTERVAL :later SECOND' : 'now() + make_interval(secs => :later)';
        $this->db->beginTransaction();
        try {
            $changed = $this->run("UPDATE idempotency_records SET status = 'pending', provider = COALESCE(provider, :provider),
                  provider_request_id = :request, last_error = :error, updated_at = $now, version = version + 1
                WHERE id = :id AND status = 'processing'",
                ['provider' => $provider, 'request' => $providerRequestId, 'error' => $error, 'id' => $id])->rowCount();
            if ($changed === 0) {
                $this->db->rollBack();
                throw new IdempotencyError("cannot mark record $id pending: it is no longer processing", 409);
            }
            $detail = $this->mysql ? 'JSON_OBJECT(\'providerRequestId\', provider_request_id, \'error\', last_error)'
                                   : 'jsonb_build_object(\'providerRequestId\', provider_request_id, \'error\', last_error)';
            $this->run("INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind, payload_hash, detail)
                SELECT id, scope, operation, idempotency_key, 'pending', payload_hash, $detail FROM idempotency_records WHERE id = ?", [$id]);
            $this->run("INSERT INTO reconciliation_items (record_id, provider, provider_request_id, state, next_check_at, last_error)
                SELECT id, provider, provider_request_id, 'open', $later, last_error FROM idempotency_records WHERE id = :id",
                ['later' => $firstCheckInSeconds, 'id' => $id]);
            $this->db->commit();
        } catch (IdempotencyError $e) {
            throw $e;
        } catch (Throwable $e) {
            if ($this->db->inTransaction()) $this->db->rollBack();
            throw $e;
        }
    }

    /**
     * MySQL/MariaDB: the seed's reservation. 1 affected row: this request inserted the record; 0: the key
     * existed (the no-op update sets nothing and took the row's lock, so it waited for an uncommitted
     * reservation of the same key). The 'reserved' event commits with it. Times are UTC (ADR 0012).
     */
    private function reserveMysql(array $params): ?array
    {
        $this->db->beginTransaction();
        try {
            $reserved = $this->run(<<<'SQL'
                INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status,
                  resource_type, resource_id, correlation_id, provider, amount_minor, currency, created_at, updated_at, expires_at)
                VALUES (:scope, :op, :key, :hash, 'processing', :resource_type, :resource_id, :correlation_id,
                  :provider, :amount_minor, :currency, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) + INTERVAL :ttl SECOND)
                ON DUPLICATE KEY UPDATE id = LAST_INSERT_ID(id)
                SQL, $params)->rowCount();
            $owner = null;
            if ($reserved === 1) {
                $owner = ['id' => (int) $this->db->lastInsertId()];
                $this->run("INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind, payload_hash)
                    VALUES (?, ?, ?, ?, 'reserved', ?)", [$owner['id'], $params['scope'], $params['op'], $params['key'], $params['hash']]);
            }
            $this->db->commit(); // also when the key existed: it ends the lock the no-op update took
            return $owner;
        } catch (Throwable $e) {
            $this->db->rollBack();
            throw $e;
        }
    }

    // Only from 'processing' (an operator may have resolved the record meanwhile); the event row
    // commits with the state change or not at all.
    private function finish(int $id, string $status, int $code, array $headerPairs, ?string $body,
                            string $set, array $params): void
    {
        $pairs = array_map(fn (array $p) => [(string) $p[0], (string) $p[1]], array_values($headerPairs));
        $params += ['id' => $id, 'code' => $code, 'body' => $body,
                    'headers' => json_encode($pairs, JSON_UNESCAPED_SLASHES | JSON_THROW_ON_ERROR)];
        if ($this->mysql) {
            $this->finishMysql($id, $status, $set, $params);
            return;
        }
        $done = $this->row(<<<SQL
            WITH upd AS (
              UPDATE idempotency_records SET status = '$status', response_code = :code,
                response_headers = :headers::jsonb, response_body = :body, $set,
                updated_at = now(), version = version + 1
              WHERE id = :id AND status = 'processing'
              RETURNING *
            ), ev AS (
              INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind, payload_hash,
                response_code, detail)
              SELECT id, scope, operation, idempotency_key, '$status', payload_hash, response_code,
                CASE WHEN status = 'failed' THEN jsonb_build_object('error', last_error) END FROM upd
            )
            SELECT id FROM upd
            SQL, $params);
        if (!$done) throw new IdempotencyError("cannot mark record $id $status: it is no longer processing", 409);
    }

    /** MySQL/MariaDB: no RETURNING, so the change and its event are two statements in one transaction. */
    private function finishMysql(int $id, string $status, string $set, array $params): void
    {
        $this->db->beginTransaction();
        try {
            $changed = $this->run(<<<SQL
                UPDATE idempotency_records SET status = '$status', response_code = :code,
                  response_headers = :headers, response_body = :body, $set,
                  updated_at = UTC_TIMESTAMP(6), version = version + 1
                WHERE id = :id AND status = 'processing'
                SQL, $params)->rowCount();
            if ($changed === 0) {
                $this->db->rollBack();
                throw new IdempotencyError("cannot mark record $id $status: it is no longer processing", 409);
            }
            // The row this transaction just changed (and holds), read by its primary key.
            $this->run(<<<SQL
                INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind, payload_hash,
                  response_code, detail)
                SELECT id, scope, operation, idempotency_key, '$status', payload_hash, response_code,
                  CASE WHEN status = 'failed' THEN JSON_OBJECT('error', last_error) END
                FROM idempotency_records WHERE id = ?
                SQL, [$id]);
            $this->db->commit();
        } catch (IdempotencyError $e) {
            throw $e;
        } catch (Throwable $e) {
            if ($this->db->inTransaction()) $this->db->rollBack();
            throw $e;
        }
    }

    private function row(string $sql, array $params): ?array
    {
        return $this->run($sql, $params)->fetch(PDO::FETCH_ASSOC) ?: null;
    }

    private function run(string $sql, array $params): PDOStatement
    {
        $stmt = $this->db->prepare($sql);
        $stmt->execute($params);
        return $stmt;
    }
}
