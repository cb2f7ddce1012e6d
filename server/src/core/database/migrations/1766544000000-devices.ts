import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 47 §4: browsers paired with the manager (a phone), each with a credential of its own, and
 * the one-time links that pair them. Only hashes of the secrets are stored. A used link is kept
 * (so a second use is told "already used", 410) until it is a day old. Both name their person: on
 * a team's board every runner shares the tables, and a device is only its own person's.
 */
export class Devices1766544000000 implements MigrationInterface {
  name = 'Devices1766544000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE device (
      id varchar PRIMARY KEY NOT NULL,
      person_id varchar NOT NULL,
      pairing_id varchar NOT NULL,
      name varchar NOT NULL,
      credential_hash varchar NOT NULL,
      user_agent varchar,
      paired_at varchar NOT NULL,
      last_seen_at varchar
    )`);
    await q.query('CREATE UNIQUE INDEX device_credential ON device (credential_hash)');
    await q.query('CREATE INDEX device_person ON device (person_id, paired_at)');
    await q.query(`CREATE TABLE pairing_link (
      id varchar PRIMARY KEY NOT NULL,
      person_id varchar NOT NULL,
      secret_hash varchar NOT NULL,
      name varchar NOT NULL,
      created_at varchar NOT NULL,
      expires_at varchar NOT NULL,
      used_at varchar,
      device_id varchar
    )`);
    await q.query('CREATE UNIQUE INDEX pairing_link_secret ON pairing_link (secret_hash)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE pairing_link');
    await q.query('DROP TABLE device');
  }
}
