<?php
// The seed's Redis idempotency handler (PHP + php-redis), as services run it — and what
// the console's Redis key stores read (README "Redis key stores", format `seed`):
//
//   SET idempotency:{key} 'processing' NX EX 86400     the first request owns the key
//   SET idempotency:{key} '{"status":…,"body":…}' EX 86400   its answer, replayed to retries
//   DEL idempotency:{key}                               when the operation throws
//
// Its known failure modes are what the console shows: a process that dies after the
// SET NX leaves 'processing' behind (every retry gets 409 for a day: a wedged key); DEL
// on throw re-runs a partly applied operation; no payload fingerprint (a reused key
// replays another request's answer); 5xx answers are stored and replayed.
declare(strict_types=1);

final class RedisIdempotency
{
    public function __construct(
        private Redis $redis,
        private int $ttl = 86400,
        private string $prefix = 'idempotency:',
    ) {
    }

    /**
     * Runs $operation at most once per key. $operation returns [http status, body].
     * @return array{http: int, body: mixed, outcome: string}  outcome: owner | replay | in_progress
     */
    public function handle(string $key, callable $operation): array
    {
        $k = $this->prefix . $key;
        if (!$this->redis->set($k, 'processing', ['nx', 'ex' => $this->ttl])) {
            $stored = $this->redis->get($k);
            if ($stored === 'processing' || $stored === false) {
                return ['http' => 409, 'body' => ['error' => 'a request with this key is in progress'], 'outcome' => 'in_progress'];
            }
            $result = json_decode($stored, true, 512, JSON_THROW_ON_ERROR);
            return ['http' => $result['status'], 'body' => $result['body'], 'outcome' => 'replay'];
        }
        try {
            [$status, $body] = $operation();
        } catch (Throwable $e) {
            $this->redis->del($k);
            throw $e;
        }
        $this->redis->set($k, json_encode(['status' => $status, 'body' => $body], JSON_THROW_ON_ERROR), ['ex' => $this->ttl]);
        return ['http' => $status, 'body' => $body, 'outcome' => 'owner'];
    }
}
