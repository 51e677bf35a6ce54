import { readdir, readFile } from 'node:fs/promises';
import { ROUTES } from '@prospect/contract';
import express from 'express';
import { parseAllDocuments } from 'yaml';
import { AppConfig, EnvSchema } from '../../src/config/app-config.js';
import { SERVER_CONNECTIONS_PER_REPLICA } from '../../src/database/pool-size.js';

const DIR = new URL('../../../../deploy/kubernetes/', import.meta.url);

type Manifest = { apiVersion: string; kind: string; metadata: { name: string }; spec: any; stringData?: Record<string, string> };
type Container = { image: string; command?: string[]; ports?: Array<{ name: string; containerPort: number }>; env?: Array<{ name: string; value: string }>; envFrom?: Array<{ secretRef: { name: string } }>; startupProbe?: any; livenessProbe?: any; readinessProbe?: any; lifecycle?: any };

/** No cluster runs where we test: the manifests are read and held against the code (routes, variables, names). */
describe('deploy/kubernetes', () => {
  let manifests: Manifest[];
  const one = (kind: string) => {
    const found = manifests.filter((m) => m.kind === kind);
    expect(found).toHaveLength(1);
    return found[0]!;
  };
  beforeAll(async () => {
    const files = (await readdir(DIR)).filter((f) => f.endsWith('.yaml'));
    manifests = [];
    for (const file of files) {
      for (const doc of parseAllDocuments(await readFile(new URL(file, DIR), 'utf8'))) {
        expect(doc.errors).toEqual([]);
        manifests.push(doc.toJS() as Manifest);
      }
    }
  });

  it('has a Deployment, a migration Job, a Service, an Ingress, a PodDisruptionBudget, an HPA and an example Secret', () => {
    expect(manifests.map((m) => m.kind).sort()).toEqual(['Deployment', 'HorizontalPodAutoscaler', 'Ingress', 'Job', 'PodDisruptionBudget', 'Secret', 'Service']);
  });

  it('gives a slow start its own probe: liveness only begins once the process serves, within minutes rather than 3 × 10 s', () => {
    const api: Container = one('Deployment').spec.template.spec.containers[0];
    expect(api.startupProbe.httpGet).toEqual({ path: ROUTES.healthLive, port: 'http' });
    const startupBudgetSeconds = api.startupProbe.periodSeconds * api.startupProbe.failureThreshold;
    expect(startupBudgetSeconds).toBeGreaterThanOrEqual(60);
    expect(startupBudgetSeconds).toBeGreaterThan(api.livenessProbe.periodSeconds * api.livenessProbe.failureThreshold);
  });

  it('routes an Ingress for PUBLIC_URL’s host, over TLS, to the Service, whose proxy the API believes (TRUST_PROXY)', async () => {
    const ingress = one('Ingress');
    const service = one('Service');
    const api: Container = one('Deployment').spec.template.spec.containers[0];
    const config = AppConfig.fromEnv({ ...Object.fromEntries(api.env!.map((e) => [e.name, e.value])), ...one('Secret').stringData });
    const publicUrl = new URL(config.publicUrl);
    expect(publicUrl.protocol).toBe('https:');
    const [rule] = ingress.spec.rules;
    expect(rule.host).toBe(publicUrl.hostname);
    expect(ingress.spec.tls[0].hosts).toEqual([publicUrl.hostname]);
    expect(rule.http.paths).toEqual([{ path: '/', pathType: 'Prefix', backend: { service: { name: service.metadata.name, port: { name: 'http' } } } }]);
    expect(service.spec.ports.map((p: { name: string }) => p.name)).toContain('http');
    // The controller's pods have cluster-private addresses (a pod network such as 10.42.0.0/16): without
    // trusting them the API would take the controller for every client (one address for every limit).
    const app = express().set('trust proxy', config.trustProxy);
    const trusts = app.get('trust proxy fn') as (address: string, hop: number) => boolean;
    expect(trusts('10.42.0.7', 0)).toBe(true);
    expect(trusts('203.0.113.9', 0)).toBe(false);
    expect(await readFile(new URL('ingress.yaml', DIR), 'utf8')).toMatch(/TRUST_PROXY/);
  });

  it('says how to build the image the manifests name, from the repository root with the shipped Dockerfile', async () => {
    const api: Container = one('Deployment').spec.template.spec.containers[0];
    const text = await readFile(new URL('deployment.yaml', DIR), 'utf8');
    expect(text).toContain(`docker build -f apps/api/Dockerfile -t ${api.image} .`);
    await expect(readFile(new URL('../../apps/api/Dockerfile', DIR), 'utf8')).resolves.toMatch(/^FROM /m);
  });

  it('probes the routes that exist: liveness on /api/health/live, readiness on /api/health/ready, on the container port', () => {
    const api: Container = one('Deployment').spec.template.spec.containers[0];
    expect(api.livenessProbe.httpGet.path).toBe(ROUTES.healthLive);
    expect(api.readinessProbe.httpGet.path).toBe(ROUTES.healthReady);
    expect(api.livenessProbe.httpGet.port).toBe('http');
    expect(api.ports!.find((p) => p.name === 'http')!.containerPort).toBe(Number(api.env!.find((e) => e.name === 'PORT')!.value));
  });

  it('configures the API only with variables the schema knows, valid with the example Secret, never migrating in a replica', () => {
    const api: Container = one('Deployment').spec.template.spec.containers[0];
    const secret = one('Secret');
    expect(api.envFrom).toEqual([{ secretRef: { name: secret.metadata.name } }]);
    const env = { ...Object.fromEntries(api.env!.map((e) => [e.name, e.value])), ...secret.stringData };
    const known = Object.keys(EnvSchema.shape);
    for (const name of Object.keys(env)) expect(known).toContain(name);
    const config = AppConfig.fromEnv(env);
    expect(config.migrateOnStart).toBe(false);
    expect(config.metricsPort).toBe(api.ports!.find((p) => p.name === 'metrics')!.containerPort);
    // Prometheus scrapes the pod's address: the metrics port must listen beyond loopback, its default.
    expect(config.metricsHost).toBe('0.0.0.0');
    // Longer than the drain and the preStop pause together.
    const pod = one('Deployment').spec.template.spec;
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(config.shutdownGraceSeconds + Number(api.lifecycle?.preStop?.exec.command[1] ?? 0));
  });

  it('migrates in a Job with the same image and Secret, through main.js migrate', () => {
    // Named by Kubernetes at each `kubectl create`: nothing in the file is edited per release but the image.
    expect(one('Job').metadata).toMatchObject({ generateName: 'prospect-migrate-' });
    expect(one('Job').metadata.name).toBeUndefined();
    const job: Container = one('Job').spec.template.spec.containers[0];
    const api: Container = one('Deployment').spec.template.spec.containers[0];
    expect(job.command).toEqual(['node', 'apps/api/dist/main.js', 'migrate']);
    expect(job.image).toBe(api.image);
    expect(job.envFrom).toEqual(api.envFrom);
  });

  it('sends mail through SMTP_URL from MAIL_FROM in the example Secret, the same for every replica', () => {
    const config = AppConfig.fromEnv(one('Secret').stringData!);
    expect(config.smtpUrl).toMatch(/^smtps?:\/\//);
    expect(config.mailFrom).toMatch(/<no-reply@id\.example\.com>$/);
    expect(config.requireEmailVerification).toBe(true);
  });

  it('scales to no more replicas than a Postgres with the default max_connections holds, a rolling update and the migration Job included', () => {
    const hpa = one('HorizontalPodAutoscaler');
    const surge = one('Deployment').spec.strategy.rollingUpdate.maxSurge as number;
    // max_connections 100 less superuser_reserved_connections 3, Postgres's defaults.
    expect((hpa.spec.maxReplicas + surge) * SERVER_CONNECTIONS_PER_REPLICA + 1).toBeLessThanOrEqual(97);
    expect(hpa.spec.minReplicas).toBeLessThanOrEqual(hpa.spec.maxReplicas);
  });

  it('points the Service, the PDB and the HPA at the Deployment', () => {
    const deployment = one('Deployment');
    const labels = deployment.spec.template.metadata.labels;
    expect(one('Service').spec.selector).toEqual(labels);
    expect(one('Service').spec.ports[0].targetPort).toBe('http');
    expect(one('PodDisruptionBudget').spec.selector.matchLabels).toEqual(labels);
    expect(one('HorizontalPodAutoscaler').spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: deployment.metadata.name });
    expect(deployment.spec.strategy.rollingUpdate.maxUnavailable).toBe(0);
  });
});
