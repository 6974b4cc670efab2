<?php
// A toy payment service around redis-idempotency.php, used by test/redis-php.test.ts:
// a master forks --workers worker processes; each worker serves its share of the jobs,
// every request in a request process of its own (forked, as php-fpm serves requests),
// so a request that crashes takes only itself down — after its SET NX.
//
//   php redis-service.php [--host 127.0.0.1] [--port 6379] [--db 9] [--workers 3] [--ttl 86400]
//   stdin: [{"key": "k1", "action": "complete" | "decline" | "throw" | "crash" | "upstream_5xx", "amount": 1299}, …]
//   stdout: one JSON line per request: {"key","action","outcome":"owner"|"replay"|"in_progress"|"threw"|"crashed","http",…}
declare(strict_types=1);
require __DIR__ . '/forking.php';
require __DIR__ . '/redis-idempotency.php';

$opt = getopt('', ['host:', 'port:', 'db:', 'workers:', 'ttl:']);
$host = $opt['host'] ?? '127.0.0.1';
$port = (int) ($opt['port'] ?? 6379);
$db = (int) ($opt['db'] ?? 0);
$workers = max(1, (int) ($opt['workers'] ?? 3));
$ttl = (int) ($opt['ttl'] ?? 86400);
$jobs = json_decode(stream_get_contents(STDIN), true, 512, JSON_THROW_ON_ERROR);
$out = fn (array $line) => fwrite(STDOUT, json_encode($line, JSON_UNESCAPED_SLASHES | JSON_THROW_ON_ERROR) . "\n");

/** One request, in its own process: connect, run the handler, answer. */
function serve(array $job, string $host, int $port, int $db, int $ttl, callable $out): void
{
    $redis = new Redis();
    $redis->connect($host, $port, 2.0);
    $redis->select($db);
    $handler = new RedisIdempotency($redis, $ttl);
    try {
        $r = $handler->handle($job['key'], function () use ($job): array {
            usleep(20_000); // "call the payment provider"
            switch ($job['action']) {
                case 'decline':
                    return [402, ['error' => 'card_declined']];
                case 'upstream_5xx':
                    return [503, ['error' => 'provider unavailable']];
                case 'throw':
                    throw new RuntimeException('provider timeout after the charge was sent');
                case 'crash':
                    posix_kill(posix_getpid(), SIGKILL); // the request process dies: no DEL, no result
                    return [500, null];
                default:
                    return [201, ['id' => 'ch_' . bin2hex(random_bytes(6)), 'amount' => $job['amount'] ?? 1299, 'card' => '4242 4242 4242 4242', 'email' => 'jane@example.com']];
            }
        });
        $out(['key' => $job['key'], 'action' => $job['action'], 'outcome' => $r['outcome'], 'http' => $r['http'], 'pid' => getmypid()]);
    } catch (Throwable $e) {
        $out(['key' => $job['key'], 'action' => $job['action'], 'outcome' => 'threw', 'http' => 500, 'error' => $e->getMessage(), 'pid' => getmypid()]);
    }
}

exit(serve_forked($jobs, $workers,
    fn (array $job) => serve($job, $host, $port, $db, $ttl, $out),
    fn (array $job, int $signal) => $out(['key' => $job['key'], 'action' => $job['action'], 'outcome' => 'crashed', 'signal' => $signal])));
