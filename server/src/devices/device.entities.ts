import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/** A paired browser (issue 47 §4). Only a hash of its credential is kept: the row cannot be replayed. */
@Entity('device')
@Index('device_credential', ['credentialHash'], { unique: true })
@Index('device_person', ['personId', 'pairedAt'])
export class DeviceEntity {
  @PrimaryColumn('varchar') id!: string;
  /** Whose: on a team's board every runner shares the table, and a device is its person's only. */
  @Column('varchar') personId!: string;
  /** The link that paired it. */
  @Column('varchar') pairingId!: string;
  @Column('varchar') name!: string;
  /** SHA-256 of the credential in the browser's cookie, hex. */
  @Column('varchar') credentialHash!: string;
  @Column('varchar', { nullable: true }) userAgent!: string | null;
  @Column('varchar') pairedAt!: string;
  @Column('varchar', { nullable: true }) lastSeenAt!: string | null;
}

/** A one-time pairing link: redeemed once (`usedAt`), or never after `expiresAt`. */
@Entity('pairing_link')
@Index('pairing_link_secret', ['secretHash'], { unique: true })
export class PairingLinkEntity {
  @PrimaryColumn('varchar') id!: string;
  @Column('varchar') personId!: string;
  /** SHA-256 of the link's secret, hex. */
  @Column('varchar') secretHash!: string;
  @Column('varchar') name!: string;
  @Column('varchar') createdAt!: string;
  @Column('varchar') expiresAt!: string;
  @Column('varchar', { nullable: true }) usedAt!: string | null;
  /** The device it paired. */
  @Column('varchar', { nullable: true }) deviceId!: string | null;
}
