import { readdir, readFile } from 'node:fs/promises';
import { ROUTES } from '@prospect/contract';
import { parseAllDocuments } from 'yaml';
import { AppConfig, EnvSchema } from '../src/config/app-config.js';

const DIR = new URL('../../../deploy/kubernetes/', import.meta.url);

type Manifest = { apiVersion: string; kind: string; metadata: { name: string }; spec: any; stringData?: Record<string, string> };
type Container = { image: string; command?: string[]; ports?: Array<{ name: string; containerPort: number }>; env?: Array<{ name: string; value: string }>; envFrom?: Array<{ secretRef: { name: string } }>; livenessProbe?: any; readinessProbe?: any; lifecycle?: any };

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

  it('has a Deployment, a migration Job, a Service, a PodDisruptionBudget, an HPA and an example Secret', () => {
    expect(manifests.map((m) => m.kind).sort()).toEqual(['Deployment', 'HorizontalPodAutoscaler', 'Job', 'PodDisruptionBudget', 'Secret', 'Service']);
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
    // Longer than the drain and the preStop pause together.
    const pod = one('Deployment').spec.template.spec;
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(config.shutdownGraceSeconds + Number(api.lifecycle?.preStop?.exec.command[1] ?? 0));
  });

  it('migrates in a Job with the same image and Secret, through main.js migrate', () => {
    const job: Container = one('Job').spec.template.spec.containers[0];
    const api: Container = one('Deployment').spec.template.spec.containers[0];
    expect(job.command).toEqual(['node', 'apps/api/dist/main.js', 'migrate']);
    expect(job.image).toBe(api.image);
    expect(job.envFrom).toEqual(api.envFrom);
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
