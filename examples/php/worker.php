<?php
// A toy payment service around idempotency.php, used by test/php-writer.test.ts.
//
//   php worker.php --dsn postgresql://user:pass@host:5432/db [--scope S] [--operation O] \
//       [--key K --amount 1299 [--decline]]          one job from the arguments, or
//       [--jobs '[{"key":"k1","amount":1299}, ...]']  a JSON job list (on stdin when neither is given)
//   A PDO DSN works too: --dsn 'pgsql:host=…;dbname=…' --user U [--password P].
//
// It connects, prints {"ready":true} and only then reads stdin, so a test can start many
// workers and release them at the same moment. One JSON line per job on stdout.
declare(strict_types=1);
require __DIR__ . '/idempotency.php';

$opt = getopt('', ['dsn:', 'user:', 'password:', 'scope:', 'operation:', 'key:', 'amount:', 'currency:', 'decline', 'jobs:', 'sleep-ms:']);
[$dsn, $user, $password] = pdo_dsn($opt['dsn'] ?? getenv('DATABASE_URL') ?: '', $opt['user'] ?? null, $opt['password'] ?? null);
$store = new IdempotencyStore(new PDO($dsn, $user, $password));
$out = fn (array $line) => print(json_encode($line, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE | JSON_THROW_ON_ERROR) . "\n");
$out(['ready' => true, 'pid' => getmypid()]);

if (isset($opt['key'])) {
    $jobs = [['key' => $opt['key'], 'amount' => (int) ($opt['amount'] ?? 1299), 'decline' => isset($opt['decline'])]];
} else {
    $jobs = json_decode($opt['jobs'] ?? stream_get_contents(STDIN), true, 512, JSON_THROW_ON_ERROR);
}
$scope = $opt['scope'] ?? 'tenant:acme';
$operation = $opt['operation'] ?? 'capture_payment';
$currency = $opt['currency'] ?? 'EUR';
$sleepMs = (int) ($opt['sleep-ms'] ?? 40);

foreach ($jobs as $job) {
    $amount = $job['amount'];
    // What the client asked for. The hash covers the intent, not transport details.
    $payload = ['amount' => $amount, 'currency' => $currency, 'description' => 'Café – Müller / order 🎉'];
    try {
        $r = $store->begin($scope, $operation, $job['key'] ?? null, $payload, 86400, ['amount_minor' => $amount, 'currency' => $currency, 'provider' => 'mockpay']);
    } catch (IdempotencyError $e) {
        $out(['key' => $job['key'] ?? null, 'outcome' => 'error', 'http' => $e->getCode(), 'error' => $e->getMessage(), 'executed' => false]);
        continue;
    }
    if ($r['outcome'] !== 'owner') {
        // replay: send $r['http'], every header pair in order, then $r['body'] unchanged.
        $out(['key' => $job['key']] + $r + ['executed' => false]);
        continue;
    }
    usleep($sleepMs * 1000); // "call the payment provider"
    if (!empty($job['decline'])) {
        [$code, $headers, $body] = [402, [['Content-Type', 'application/json']], '{"error":"card_declined"}'];
        $store->fail($r['id'], $code, $headers, $body, 'card declined by mockpay');
    } else {
        $chargeId = 'ch_' . bin2hex(random_bytes(8));
        $code = 201;
        $headers = [['Content-Type', 'application/json'], ['X-Charge-Id', $chargeId]];
        $body = json_encode(['id' => $chargeId, 'amount' => $amount, 'currency' => $currency, 'note' => 'é/ü 🎉'], JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE) . "\n";
        $store->complete($r['id'], $code, $headers, $body, $chargeId, 'psp_' . $chargeId);
    }
    $out(['key' => $job['key'], 'outcome' => 'owner', 'http' => $code, 'id' => $r['id'], 'headers' => $headers, 'body' => $body, 'executed' => true]);
}

/** postgresql://user:pass@host:port/db → [pgsql DSN, user, password]; a pgsql: DSN passes through. */
function pdo_dsn(string $dsn, ?string $user, ?string $password): array
{
    if (str_starts_with($dsn, 'pgsql:')) return [$dsn, $user, $password];
    $u = parse_url($dsn);
    if (!$u || !in_array($u['scheme'] ?? '', ['postgres', 'postgresql'], true)) {
        fwrite(STDERR, "--dsn must be a postgres URL or a pgsql: PDO DSN\n");
        exit(2);
    }
    $parts = ['host' => $u['host'] ?? '127.0.0.1', 'port' => $u['port'] ?? 5432, 'dbname' => ltrim(rawurldecode($u['path'] ?? ''), '/')];
    parse_str($u['query'] ?? '', $query);
    if (isset($query['sslmode'])) $parts['sslmode'] = $query['sslmode'];
    $pdoDsn = 'pgsql:' . implode(';', array_map(fn ($k, $v) => "$k=$v", array_keys($parts), $parts));
    return [$pdoDsn, $user ?? (isset($u['user']) ? rawurldecode($u['user']) : null), $password ?? (isset($u['pass']) ? rawurldecode($u['pass']) : null)];
}
